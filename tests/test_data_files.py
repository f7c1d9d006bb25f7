"""File-backed datasets in worker processes: what a notebook is a poor home for (fork and spawn pools)."""
import multiprocessing as mp
import pickle

import numpy as np
import pytest

from disentlit.data_files import DSprites, dsprites_index, pixel_index
from disentlit.datasets import SmallNORB
from disentlit.catalog import convert, get_dataset, write_example_source, EXAMPLE_SIZES


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    convert("dsprites", write_example_source("dsprites", root / "src"), root=root, sizes=EXAMPLE_SIZES["dsprites"])
    convert("smallnorb", write_example_source("smallnorb", root / "src"), root=root, sizes=EXAMPLE_SIZES["smallnorb"])
    return root


def _indices(args):
    data, idx = args
    return dsprites_index(data.obs(idx)).tolist()


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_workers_read_an_open_dataset(root, method):
    data = DSprites(root=root)
    data.obs([0, 1])                                   # the parent holds the HDF5 file open
    jobs = [(data, [i, 31 - i]) for i in range(8)]
    pool = mp.get_context(method).Pool(2)
    try: got = pool.map(_indices, jobs)
    finally: pool.close(); pool.join()                # the workers end on their own: no SIGTERM (Pool's __exit__)
    assert got == [[i, 31 - i] for i in range(8)]
    assert dsprites_index(data.obs([5])).tolist() == [5]   # and the parent still reads


def test_pickle_keeps_parameters(root):
    data = get_dataset("smallnorb", split="test", root=str(root))
    clone = pickle.loads(pickle.dumps(data))
    assert isinstance(clone, SmallNORB) and clone.params == {"split": "test", "root": str(root)}
    idx = np.array([3, 0, 31])
    assert (pixel_index(clone.obs(idx)) == idx).all()


# ---- MPI3D and the dSprites variants ----

import json
from unittest import mock

from disentlit.core import ChecksumError
from disentlit.datasets import MPI3D_SETS, MPI3DToy
from disentlit.data_files import SOURCES, RawFile, file_hash, pixel_index
from disentlit.catalog import list_datasets, prepare


def test_mpi3d_download_verify_convert_end_to_end(tmp_path):
    "prepare: a file:// download of an example in the official format, its checksum verified, converted, statistics in."
    src = write_example_source("mpi3d_toy", tmp_path / "src")
    assert src.name == "mpi3d_toy.npz" and SOURCES["mpi3d_toy"][0].url.endswith("/mpi3d_toy.npz")
    with pytest.raises(ChecksumError, match="55889cb7c7dfc655d6e0277beee88868"):           # not the official file
        prepare("mpi3d_toy", source=src, root=tmp_path)
    spec = RawFile(src.name, src.as_uri(), f"md5:{file_hash(src, 'md5')}", src.stat().st_size)
    with mock.patch.dict(SOURCES, mpi3d_toy=(spec,)), mock.patch.object(MPI3DToy, "factor_sizes",
                                                                       EXAMPLE_SIZES["mpi3d_toy"]):
        out = prepare("mpi3d_toy", root=tmp_path)
    data = get_dataset("mpi3d_toy", root=str(tmp_path))
    n = len(data)
    assert out == tmp_path / "mpi3d_toy.h5" and n == 48 and data.obs_shape == (64, 64, 3)
    idx = np.random.default_rng(0).permutation(n)
    assert (pixel_index(data.obs(idx)) == idx).all()
    x = np.load(src)["images"].astype(np.float64) / 255
    m = data._exact_moments()                                  # stored at conversion: no pass at first use
    np.testing.assert_allclose(m["mean"], x.mean((0, 1, 2)), atol=1e-12)
    np.testing.assert_allclose(m["std_per_image"], x.reshape(n, -1, 3).std(1, ddof=1).mean(0), atol=1e-12)
    rows = {r["name"]: r for r in list_datasets(root=tmp_path)}
    assert rows["mpi3d_toy"]["available"] and not rows["mpi3d_real"]["available"]
    assert rows["mpi3d_toy"]["factor_sizes"] == [6, 6, 2, 3, 3, 40, 40] and rows["mpi3d_toy"]["num_obs"] == 1_036_800


def _colours(args):
    data, idx = args
    return data.obs(idx).tolist()


@pytest.mark.parametrize("name", ["color_dsprites", "noisy_dsprites"])
def test_dsprites_variants_read_the_same_in_workers(root, name):
    "A variant over the dSprites cache pickles without its handle; a worker draws exactly the parent's observations."
    data = get_dataset(name, root=str(root), seed=4)
    idx = [3, 0, 17]
    with mp.get_context("spawn").Pool(1) as pool:
        assert pool.map(_colours, [(data, idx)]) == [data.obs(idx).tolist()]
    x, white = data.obs(idx), DSprites(root=root).obs(idx)[..., 0] > 0
    if name == "color_dsprites": assert dsprites_index(x[..., :1]).tolist() == idx and (x[~white] == 0).all()
    else: assert (x[white] == 255).all() and x[~white].std() > 50                 # white sprite, noise around it


def test_datasets_command_lists_mpi3d_and_the_variants(cli, data_home):
    convert("mpi3d_realistic", write_example_source("mpi3d_realistic", data_home / "src"), root=data_home,
            sizes=EXAMPLE_SIZES["mpi3d_realistic"])
    code, out, err = cli("datasets", "--json")
    assert code == 0, err
    rows = {d["name"]: d for d in json.loads(out)["datasets"]}
    assert {f"mpi3d_{s}" for s in MPI3D_SETS} | {"color_dsprites", "noisy_dsprites", "color_sprites",
                                                  "noisy_sprites"} <= set(rows)
    assert rows["mpi3d_realistic"]["available"] and not rows["mpi3d_toy"]["available"]
    assert not rows["color_dsprites"]["available"] and rows["color_sprites"]["available"]
    code, out, err = cli("datasets")
    assert "--prepare mpi3d_toy" in out and "--prepare color_dsprites" in out
    code, out, err = cli("datasets", "--stats", "mpi3d_realistic", "--json")       # stored at conversion
    assert code == 0, err
    assert len(json.loads(out)["mean"]) == 3
    code, out, err = cli("datasets", "--prepare", "noisy_sprites")
    assert code == 2 and "synthetic" in err and "mpi3d_toy" in err
