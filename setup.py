"""Packaging for disentlit: every field comes from settings.ini, which nbdev also reads."""
from configparser import ConfigParser
from pathlib import Path

import setuptools

cfg = ConfigParser(delimiters=["="])
cfg.read(Path(__file__).parent / "settings.ini", encoding="utf-8")
c = cfg["DEFAULT"]


def words(key):
    "Space-separated requirement list from settings.ini (empty when absent)."
    return c.get(key, "").split()


readme = Path(__file__).parent / "README.md"
setuptools.setup(
    name=c["lib_name"],
    version=c["version"],
    description=c["description"],
    long_description=readme.read_text(encoding="utf-8") if readme.exists() else c["description"],
    long_description_content_type="text/markdown",
    author=c["author"],
    author_email=c["author_email"],
    license="Apache-2.0",                    # settings.ini's apache2; the text is LICENSE, which goes into the wheel
    license_files=["LICENSE"],
    url=c["git_url"] or None,                # none until settings.ini names the repository
    keywords=c["keywords"].split(),
    classifiers=[
        f"Development Status :: {c['status']} - Alpha",
        f"Intended Audience :: {c['audience']}",
        f"Natural Language :: {c['language']}",
        "Programming Language :: Python :: 3",
    ],
    python_requires=f">={c['min_python']}",
    packages=setuptools.find_packages(include=[c["lib_path"], c["lib_path"] + ".*"]),
    include_package_data=True,
    package_data={c["lib_path"]: ["py.typed", "assets/*.png"]},
    install_requires=words("requirements"),
    extras_require={name: words(f"{name}_requirements") for name in ("dev", "ray", "submitit", "wandb", "tensorboard")},
    entry_points={"console_scripts": words("console_scripts"), "nbdev": [f"{c['lib_path']}={c['lib_path']}._modidx:d"]},
    zip_safe=False,
)
