"""Two differentiated fusions in sequence, the first's output the second's input; the
second's dgrad of it and the first's epilogue adjoint become one kernel where they can."""

from __future__ import annotations

from dataclasses import replace

from xdsl.ir import BlockArgument

from mmcomp.autodiff.plan import KERNEL, Gradient, Step
from mmcomp.autodiff.replay import Operand, Replayer, dtype_of, extents, shape_of
from mmcomp.errors import FusionError
from mmcomp.frontend.builder import Fusion, Value


def chain(first: Gradient, second: Gradient, into: str) -> Gradient:
    """`second` applied to `first`'s one output, which is `second`'s input `into`.

    The backward runs second's steps, then first's with first's output adjoint being
    second's gradient of `into`. Where second's kernel writing that gradient writes only
    it, and first's epilogue adjoint is the only reader, the epilogue adjoint becomes that
    kernel's epilogue (in a GatedMLP: dH = dY Wd computes dZg and dZu from the saved Zg and
    Zu), provided the iteration spaces agree.
    """
    where = "mmcomp.autodiff.chain"
    if len(first.outputs) != 1:
        raise FusionError(
            f"{where}: expected a first fusion of one output, found {len(first.outputs)}"
        )
    if into not in second.inputs or into not in second.gradients:
        raise FusionError(
            f"{where}: argument 'into': expected an input of the second fusion that is "
            f"differentiated ({', '.join(second.gradients)}), found {into!r}"
        )
    shared = (set(first.inputs) & set(second.inputs)) - {into}
    if shared:
        raise FusionError(f"{where}: the fusions share input names {sorted(shared)}; rename them")
    second = second.renamed({into: first.outputs[0]})
    carried = second.gradients[first.outputs[0]]
    first = first.renamed({first.grad_outputs[0]: carried})
    steps = list(second.steps) + list(first.steps)
    _fuse(steps, carried)
    gradients = {k: v for k, v in second.gradients.items() if k != first.outputs[0]}
    gradients.update(first.gradients)
    return Gradient(
        forward_steps=first.forward_steps + second.forward_steps,
        steps=tuple(steps),
        inputs=first.inputs + tuple(name for name in second.inputs if name != first.outputs[0]),
        outputs=second.outputs,
        saved=first.saved + first.outputs + second.saved,
        grad_outputs=second.grad_outputs,
        gradients=gradients,
        tokens=first.tokens,
    )


def _fuse(steps: list[Step], carried: str) -> None:
    """Make the reader of `carried` the epilogue of its writer, in place, where it can."""
    writers = [step for step in steps if carried in step.outputs]
    readers = [step for step in steps if carried in step.inputs]
    if len(writers) != 1 or len(readers) != 1:
        return
    writer, reader = writers[0], readers[0]
    if writer.outputs != (carried,) or writer.over_tokens or reader.over_tokens:
        return
    if writer.kind != KERNEL:
        return
    producer, consumer = writer.fusion(), reader.fusion()
    inputs: list[str] = list(writer.inputs)
    inputs += [name for name in reader.inputs if name != carried and name not in inputs]
    f = Fusion(f"{producer.name}_{consumer.name}")
    values: dict[str, Value] = {}

    def arg_of(step: Step, source: Fusion):
        def on_arg(arg: BlockArgument) -> Operand:
            env = step.inputs[arg.index]
            found = values.get(env)
            if found is None:
                local = source.inputs[arg.index].name or f"arg{arg.index}"
                taken = {value.name for value in values.values()}
                while local in taken:
                    local += "x"
                found = values[env] = f.input(local, extents(shape_of(arg)), dtype_of(arg))
            return found

        return on_arg

    for env in inputs:
        step, source = (writer, producer) if env in writer.inputs else (reader, consumer)
        arg = source.func.body.block.args[step.inputs.index(env)]
        arg_of(step, source)(arg)
    produced = Replayer(f, producer.func, arg_of(writer, producer)).outputs()[0]
    if not isinstance(produced, Value):
        return
    values[carried] = produced

    consumer_replay = Replayer(f, consumer.func, arg_of(reader, consumer))
    try:
        for output in consumer_replay.outputs():
            if not isinstance(output, Value):
                return
            f.output(output)
        from mmcomp.passes.propagate_axis_mapping import propagate

        propagate(f)
    except FusionError:
        return
    fused = replace(
        writer,
        name=f"{writer.name}+{reader.name}",
        inputs=tuple(inputs),
        outputs=reader.outputs,
        build=_built(f),
    )
    steps[steps.index(writer)] = fused
    steps.remove(reader)


def _built(fusion: Fusion):
    def build(tokens: int | None) -> Fusion:
        del tokens
        return fusion

    return build
