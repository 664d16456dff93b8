from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from companion.trees import leading_size, stack, unstack


class Pair(NamedTuple):
    a: jax.Array
    b: dict


def _batched():
    return Pair(a=jnp.arange(6.0).reshape(3, 2), b={"c": jnp.array([10, 20, 30])})


def test_unstack_gives_one_tree_per_index():
    items = unstack(_batched())
    assert len(items) == 3
    assert isinstance(items[1], Pair)
    np.testing.assert_array_equal(items[1].a, [2.0, 3.0])
    assert int(items[2].b["c"]) == 30


def test_stack_inverts_unstack():
    tree = _batched()
    back = stack(unstack(tree))
    for x, y in zip(jax.tree.leaves(tree), jax.tree.leaves(back)):
        np.testing.assert_array_equal(x, y)


def test_unstack_of_vmapped_reset_matches_single_resets():
    keys = jax.random.split(jax.random.key(0), 4)
    batched = jax.vmap(lambda k: {"x": jax.random.normal(k, (2,))})(keys)
    singles = unstack(batched)
    key_3 = jax.random.split(jax.random.key(0), 4)[3]  # the same key, made anew
    np.testing.assert_allclose(singles[3]["x"], jax.random.normal(key_3, (2,)))


def test_errors_name_the_problem():
    with pytest.raises(ValueError, match="no leaves"):
        unstack({})
    with pytest.raises(ValueError, match="scalar leaf"):
        unstack({"x": jnp.array(1.0)})
    with pytest.raises(ValueError, match=r"disagree.*\[2, 3\]"):
        leading_size({"x": jnp.zeros(2), "y": jnp.zeros(3)})
    with pytest.raises(ValueError, match="non-empty"):
        stack([])
    with pytest.raises(ValueError, match=r"trees\[1\] has structure"):
        stack([{"x": jnp.zeros(1)}, {"y": jnp.zeros(1)}])
