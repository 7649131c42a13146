"""DLPack both ways: zero copy on host-memory devices (checked by address), lifetimes kept,
NumPy and JAX as the other side."""
import gc
import sys

import numpy as np
import pytest

import kiln
from conftest import ADD_HLO


def test_numpy_to_kiln_shares_memory(device):
    x = np.arange(4, dtype=np.float32)
    b = kiln.from_dlpack(x, device)
    assert b.unsafe_host_pointer() == x.ctypes.data
    assert b.shape == (4,) and b.dtype == np.float32
    (s,) = kiln.compile(ADD_HLO, device).execute(b, b)
    np.testing.assert_array_equal(np.asarray(s), 2 * x)


def test_kiln_to_numpy_shares_memory_read_only(device):
    (s,) = kiln.compile(ADD_HLO, device).execute(np.ones(4, np.float32), np.ones(4, np.float32))
    view = np.from_dlpack(s)
    assert view.ctypes.data == s.unsafe_host_pointer()
    assert not view.flags.writeable  # NumPy asks for DLPack 1.x, which carries read-only
    np.testing.assert_array_equal(view, [2, 2, 2, 2])
    del s
    gc.collect()
    np.testing.assert_array_equal(view, [2, 2, 2, 2])  # the view keeps the buffer alive


def test_lent_array_lives_as_long_as_the_buffer(device):
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    before = sys.getrefcount(x)
    b = kiln.from_dlpack(x, device)
    assert sys.getrefcount(x) > before  # the plugin holds it through the DLPack capsule
    del b
    gc.collect()
    assert sys.getrefcount(x) == before  # released when the buffer died


def test_buffer_outlives_the_name_of_its_array(device):
    x = np.full(4, 3, np.float32)
    b = kiln.from_dlpack(x, device)
    del x
    gc.collect()
    np.testing.assert_array_equal(np.asarray(b), [3, 3, 3, 3])


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8, np.uint16, np.int64, np.bool_,
                                   np.complex64, np.float16])
def test_round_trip_dtypes(dtype, device):
    x = (np.arange(12) % 3).astype(dtype).reshape(3, 4)
    b = kiln.from_dlpack(x, device)
    y = np.from_dlpack(b)
    assert y.dtype == x.dtype and y.shape == x.shape
    np.testing.assert_array_equal(y, x)


def test_jax_both_ways_without_copies(device):
    jnp = pytest.importorskip("jax.numpy")
    j = jnp.arange(8.0, dtype=jnp.float32).reshape(2, 4)
    b = kiln.from_dlpack(j, device)
    assert b.unsafe_host_pointer() == j.unsafe_buffer_pointer()
    np.testing.assert_array_equal(np.asarray(b), np.asarray(j))
    # A result Kiln allocated (64-byte aligned, which JAX needs to take it without a copy).
    (s,) = kiln.compile(ADD_HLO, device).execute(np.ones(4, np.float32), np.ones(4, np.float32))
    assert s.unsafe_host_pointer() % 64 == 0
    back = jnp.from_dlpack(s)  # JAX asks without max_version (legacy DLPack)
    assert back.unsafe_buffer_pointer() == s.unsafe_host_pointer()
    np.testing.assert_array_equal(np.asarray(back), [2, 2, 2, 2])


def test_non_contiguous_and_non_arrays_are_refused(device):
    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    with pytest.raises(kiln.KilnError, match="C-contiguous") as e:
        kiln.from_dlpack(x[:, 1], device)
    assert e.value.code == "INVALID_ARGUMENT"
    with pytest.raises(kiln.KilnError):
        kiln.from_dlpack("not an array", device)
