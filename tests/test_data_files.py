"""File-backed datasets in worker processes: what a notebook is a poor home for (fork and spawn pools)."""
import multiprocessing as mp
import pickle

import numpy as np
import pytest

from disentlit.data_files import (DSprites, SmallNORB, convert, dsprites_index, get_dataset, pixel_index,
                                  write_example_source, EXAMPLE_SIZES)


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
    with mp.get_context(method).Pool(2) as pool:
        got = pool.map(_indices, jobs)
    assert got == [[i, 31 - i] for i in range(8)]
    assert dsprites_index(data.obs([5])).tolist() == [5]   # and the parent still reads


def test_pickle_keeps_parameters(root):
    data = get_dataset("smallnorb", split="test", root=str(root))
    clone = pickle.loads(pickle.dumps(data))
    assert isinstance(clone, SmallNORB) and clone.params == {"split": "test", "root": str(root)}
    idx = np.array([3, 0, 31])
    assert (pixel_index(clone.obs(idx)) == idx).all()
