"""The self-check of the performance chapter's exercise 4: :func:`check_checkpointed_propagation`
(the propagation network's scan body under ``jax.checkpoint``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from companion.checks._contract import require_array
from companion.checks._messages import _
from companion.checks.core import (
    close,
    fail,
    passed,
    require_function,
    require_pair,
    run_answer,
    self_check,
)

# --- exercise 4: the propagation network's scan body under jax.checkpoint -------------------

#: The original class's outputs and gradients on the check's images, once computed.
_CHECKPOINT_REFERENCE: list = []
#: Names of jax.checkpoint's primitive across JAX versions.
_CHECKPOINT_PRIMITIVES = ("checkpoint", "remat2", "remat")


def _maze_images() -> jnp.ndarray:
    """Three float32 images ``(3, 5, 6)`` (walls, agent, target), mazes with a few walls."""
    images = np.zeros((3, 3, 5, 6), np.float32)
    images[1, 0, 1:4, 2] = 1.0  # a wall across the middle
    images[2, 0, [0, 1, 2, 3], [1, 1, 3, 3]] = 1.0
    images[2, 0, 4, :5] = 1.0
    for i, (agent, target) in enumerate((((0, 0), (4, 5)), ((2, 0), (2, 5)), ((0, 5), (4, 0)))):
        images[(i, 1) + agent] = 1.0
        images[(i, 2) + target] = 1.0
    return jnp.asarray(images)


def _checkpoints(jaxpr) -> tuple[list, list]:
    """The checkpoint equations of ``jaxpr``: those inside a scan's body, and the others."""
    inside, outside = [], []

    def walk(jaxpr, in_scan):
        for eqn in getattr(jaxpr, "jaxpr", jaxpr).eqns:
            if eqn.primitive.name in _CHECKPOINT_PRIMITIVES:
                (inside if in_scan else outside).append(eqn)
            for value in eqn.params.values():
                for item in value if isinstance(value, (list, tuple)) else [value]:
                    inner = getattr(item, "jaxpr", item)
                    if hasattr(inner, "eqns"):
                        walk(inner, in_scan or eqn.primitive.name == "scan")

    walk(jaxpr, False)
    return inside, outside


def _holds_checkpoint(eqn) -> bool:
    """Whether ``eqn`` is a checkpoint or holds one in a program inside it."""
    if eqn.primitive.name in _CHECKPOINT_PRIMITIVES:
        return True
    return any(
        _holds_checkpoint(inner_eqn)
        for value in eqn.params.values()
        for item in (value if isinstance(value, (list, tuple)) else [value])
        if hasattr(getattr(item, "jaxpr", item), "eqns")
        for inner_eqn in getattr(item, "jaxpr", item).eqns
    )


def _bodies_checkpointed(jaxpr) -> list:
    """For each scan of ``jaxpr`` (nested programs included) whose body holds a checkpoint:
    whether all the body's outputs (its new carry among them) come out of that checkpoint
    (the body wrapped), rather than of operations outside it (only a part of it wrapped).
    An output that is a constant or one of the body's inputs passed through counts as wrapped."""
    found = []

    def walk(jaxpr):
        for eqn in getattr(jaxpr, "jaxpr", jaxpr).eqns:
            if eqn.primitive.name == "scan":
                body = eqn.params["jaxpr"].jaxpr
                holders = [inner for inner in body.eqns if _holds_checkpoint(inner)]
                covered = {id(var) for inner in holders for var in inner.outvars}
                covered |= {id(var) for var in body.invars}
                if holders:
                    found.append(
                        all(
                            id(var) in covered
                            for var in body.outvars
                            if not hasattr(var, "val")  # a literal is no activation
                        )
                    )
            for value in eqn.params.values():
                for item in value if isinstance(value, (list, tuple)) else [value]:
                    inner = getattr(item, "jaxpr", item)
                    if hasattr(inner, "eqns"):
                        walk(inner)

    walk(jaxpr)
    return found


def _has_scan(jaxpr) -> bool:
    """Whether ``jaxpr`` (nested programs included) holds a ``lax.scan``."""
    return any(
        eqn.primitive.name == "scan"
        or any(
            _has_scan(getattr(item, "jaxpr", item))
            for value in eqn.params.values()
            for item in (value if isinstance(value, (list, tuple)) else [value])
            if hasattr(getattr(item, "jaxpr", item), "eqns")
        )
        for eqn in getattr(jaxpr, "jaxpr", jaxpr).eqns
    )


def _kept_per_iteration(model, images: jnp.ndarray, iterations: int) -> tuple[int, int]:
    """What the backward pass of ``jax.vmap(model)(images)`` keeps from the scan's iterations:
    the residuals of ``jax.vjp`` (traced, never computed) stacked over the ``iterations`` axis,
    as (bytes per iteration, arrays). The scan stacks whatever its body keeps on a leading
    axis of length ``iterations``, which no other residual has here (3 images of 5 x 6)."""
    import equinox as eqx

    arrays, static = eqx.partition(model, eqx.is_array)

    def pullback(arrays):
        def total(arrays):
            logits, value = jax.vmap(eqx.combine(arrays, static))(images)
            return jnp.sum(logits) + jnp.sum(value)

        return jax.vjp(total, arrays)[1]

    kept = [
        leaf
        for leaf in jax.tree.leaves(jax.eval_shape(pullback, arrays))
        if leaf.ndim and leaf.shape[0] == iterations
    ]
    return sum(leaf.size * leaf.dtype.itemsize for leaf in kept) // iterations, len(kept)


@self_check
def check_checkpointed_propagation(network_class: type) -> None:
    """Check a copy of :class:`companion.agents.ppo.PropagationActorCritic` whose ``lax.scan``
    body is wrapped in ``jax.checkpoint``: the same parameters, outputs and gradients as the
    original, with the checkpoint inside the scan's body (so that the backward pass stores one
    carry per iteration and recomputes the rest).

    ``network_class(key, width=4, hidden_sizes=(8,), iterations=7)`` must hold the original's
    arrays (fields and shapes); with its arrays in the original class, the check compares the
    logits and values of three 5 x 6 mazes (``jax.vmap``, under ``jax.jit``) and the gradients
    of their sum, and reads the program.

    Raises:
        CheckFailed: when the class is not passed (a model built from it), its call does not
            return ``(logits, value)``, float32 ``(4,)`` and ``()``, its arrays, outputs or
            gradients differ, the program has no ``lax.scan``, there is no
            ``jax.checkpoint``, it wraps the whole scan or call instead of the body, or the
            backward pass keeps more than one carry per iteration (a part of the body
            wrapped, or a policy that saves the body's activations).
    """
    import equinox as eqx

    from companion.agents import ppo

    if isinstance(network_class, eqx.Module):
        fail(_("check_checkpointed_propagation: pass the class itself, not a model built from it"))
    require_function(network_class, "network_class")
    sizes = dict(width=4, hidden_sizes=(8,), iterations=7)
    call = "network_class(key, width=4, hidden_sizes=(8,), iterations=7)"
    # both models traced, never compiled, and given the same arrays: their initialisation
    # (orthogonal matrices) is not what the exercise changes
    copy = run_answer(
        lambda key: jax.eval_shape(lambda k: network_class(k, **sizes), key),
        jax.random.key(3),
        call=call,
        jit=False,
    )
    skeleton = jax.eval_shape(
        lambda key: ppo.PropagationActorCritic(key, **sizes), jax.random.key(3)
    )
    shapes = [leaf.shape for leaf in jax.tree.leaves(skeleton)]
    traced = lambda x: isinstance(x, jax.ShapeDtypeStruct)  # noqa: E731 (an array, traced)
    copy_shapes = [leaf.shape for leaf in jax.tree.leaves(eqx.filter(copy, traced))]
    if copy_shapes != shapes:
        fail(
            _(
                "{call} holds other arrays than ppo.PropagationActorCritic of the same sizes "
                "(shapes {shapes}, expected {expected}): keep its fields and __init__ "
                "(subclass it and override __call__ only, or copy the class unchanged but for "
                "the scan's body)"
            ).format(call=call, shapes=copy_shapes, expected=shapes)
        )
    keys = jax.random.split(jax.random.key(4), len(shapes))
    leaves = [0.5 * jax.random.normal(k, shape) for k, shape in zip(keys, shapes)]
    reference = jax.tree.unflatten(jax.tree.structure(skeleton), leaves)
    arrays, static = eqx.partition(copy, traced)
    model = eqx.combine(jax.tree.unflatten(jax.tree.structure(arrays), leaves), static)
    images = _maze_images()
    call = _("model(image) for one 5 × 6 maze")
    out = run_answer(
        lambda model, image: jax.eval_shape(model, image), model, images[0], call=call, jit=False
    )
    require_pair(out, call, _("logits, value, as ppo.PropagationActorCritic's"))
    for part, shape, why in (
        ("logits", (4,), _("one per action")),
        ("value", (), _("one number")),
    ):
        what = _("the {part} of {call}").format(part=part, call=call)
        require_array(out[part == "value"], what, shape, np.float32, why=why, returns=False)

    def outputs_and_grads(m, x):
        def loss(m):
            logits, value = jax.vmap(m)(x)
            return jnp.sum(logits) + jnp.sum(value), (logits, value)

        (_total, out), grads = eqx.filter_value_and_grad(loss, has_aux=True)(m)
        return out, jax.tree.leaves(grads)

    got = run_answer(
        outputs_and_grads,
        model,
        images,
        call=_(
            "the copy's outputs for three 5 × 6 mazes (jax.vmap(model)(images)) and their gradient"
        ),
    )
    if not _CHECKPOINT_REFERENCE:  # the same for every answer: computed once
        _CHECKPOINT_REFERENCE.append(eqx.filter_jit(outputs_and_grads)(reference, images))
    want = _CHECKPOINT_REFERENCE[0]
    if not (
        isinstance(got[0], tuple)
        and len(got[0]) == 2
        and all(close(a, b, 1e-5, 1e-5) for a, b in zip(got[0], want[0]))
    ):
        if isinstance(got[0], tuple) and len(got[0]) == 2:
            for other in (sizes["iterations"] - 1, sizes["iterations"] + 1):
                # the same arrays in the original built for another number of iterations
                skeleton_n = jax.eval_shape(
                    lambda k, n=other: ppo.PropagationActorCritic(k, **{**sizes, "iterations": n}),
                    jax.random.key(3),
                )
                shifted = jax.tree.unflatten(jax.tree.structure(skeleton_n), leaves)
                logits, value = jax.vmap(shifted)(images)
                if close(got[0][0], logits, 1e-5, 1e-5) and close(got[0][1], value, 1e-5, 1e-5):
                    fail(
                        _(
                            "the copy's (logits, value) are the original's after {got} "
                            "iterations of the scan, not {expected}: the scan runs "
                            "self.iterations times (length=self.iterations), from the "
                            "embedding jnp.tanh(x @ self.embed)"
                        ).format(got=other, expected=sizes["iterations"])
                    )
        fail(
            _(
                "the copy's (logits, value) differ from ppo.PropagationActorCritic's on the same "
                "images with the same weights: jax.checkpoint changes what is stored for the "
                "backward pass, never the outputs; change nothing else in the call"
            )
        )
    if not all(close(a, b, 1e-4, 1e-5) for a, b in zip(got[1], want[1])):
        fail(
            _(
                "the copy's gradients differ from the original's with the same weights: "
                "jax.checkpoint recomputes the forward pass, the gradients stay the same"
            )
        )
    program = run_answer(jax.make_jaxpr(model), images[0], call=call, jit=False)
    if not _has_scan(program):
        fail(
            _(
                "the copy's program has no jax.lax.scan: a Python loop copies the body into the "
                "program once per iteration. Keep jax.lax.scan(propagate, ...) as the original "
                "has it and wrap its body, propagate, in jax.checkpoint"
            )
        )
    inside, outside = _checkpoints(program)
    if not inside and not outside:
        fail(
            _(
                "there is no jax.checkpoint in the copy's program: wrap the scan's body, "
                "propagate, in jax.checkpoint (jax.lax.scan(jax.checkpoint(propagate), ...)), so "
                "that the backward pass recomputes each iteration's activations instead of storing "
                "them"
            )
        )
    if not inside:
        fail(
            _(
                "jax.checkpoint wraps the whole scan (or the whole call), not the scan's body: the "
                "backward pass then recomputes the scan and stores its iterations all the same. "
                "Wrap propagate, the body passed to jax.lax.scan"
            )
        )
    if not any(_bodies_checkpointed(program)):
        fail(
            _(
                "jax.checkpoint wraps only a part of the scan's body (the messages, say), not the "
                "body: the backward pass still stores the activations computed outside it in "
                "every iteration. Wrap propagate, the body passed to jax.lax.scan"
            )
        )
    policies = {eqn.params.get("policy") for eqn in inside}
    if policies == {jax.checkpoint_policies.everything_saveable}:
        fail(
            _(
                "jax.checkpoint's policy saves everything (everything_saveable): it recomputes "
                "nothing. Leave the policy out, so that only the body's inputs are saved"
            )
        )
    # what the exercise is about: the memory the backward pass keeps per iteration. The body
    # under jax.checkpoint keeps its input, one carry (3 images x 5 x 6 cells x width, float32);
    # the original keeps more (which this JAX shows, or the measure is left out).
    iterations = sizes["iterations"]
    carry_bytes = images.shape[0] * images.shape[2] * images.shape[3] * sizes["width"] * 4
    if len(_CHECKPOINT_REFERENCE) == 1:
        _CHECKPOINT_REFERENCE.append(_kept_per_iteration(reference, images, iterations))
    original_bytes, _arrays = _CHECKPOINT_REFERENCE[1]
    kept_bytes, kept_arrays = _kept_per_iteration(model, images, iterations)
    if original_bytes >= 2 * carry_bytes and kept_bytes >= 2 * carry_bytes:
        values = dict(
            kept=kept_bytes,
            arrays=kept_arrays,
            original=original_bytes,
            carry=carry_bytes,
        )
        if policies - {None, jax.checkpoint_policies.nothing_saveable}:
            fail(
                _(
                    "the backward pass keeps {kept} bytes of each iteration ({arrays} arrays; the "
                    "original {original}, one carry {carry}): the policy given to jax.checkpoint "
                    "saves the body's activations, so it recomputes little or nothing. Leave the "
                    "policy out: jax.checkpoint then keeps only the body's input, the carry"
                ).format(**values)
            )
        fail(
            _(
                "the backward pass keeps {kept} bytes of each iteration ({arrays} arrays; the "
                "original {original}, one carry {carry}): jax.checkpoint wraps only a part of the "
                "scan's body, and what is computed outside it is kept in every iteration. Wrap "
                "propagate, the whole body passed to jax.lax.scan"
            ).format(**values)
        )
    passed(_("the copy's outputs and gradients are the original's; jax.checkpoint wraps the body"))
