"""helpers.memory: the calculator agrees with what autograd and the optimizer really keep."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

from helpers.memory import (
    AllocatedBytes,
    SavedTensors,
    activation_bytes_by_layer,
    checkpointing_problem,
    cuda_peak_bytes,
    dropout_mask_bytes,
    estimate,
    evaluation_problem,
    graph_nodes,
    mib,
    optimizer_state_bytes,
    peak_bytes,
    saved_bytes,
    storage_bytes,
)
from helpers.models import small_cnn


def cnn(inplace: bool = False) -> nn.Sequential:
    torch.manual_seed(0)
    net = small_cnn([0.5] * 3, [0.25] * 3, width=4)
    for layer in net.modules():
        if isinstance(layer, nn.ReLU):
            layer.inplace = inplace
    return net


def images(n: int = 8) -> torch.Tensor:
    return torch.randint(0, 256, (n, 3, 32, 32), dtype=torch.uint8)


MODELS = {
    "course CNN": lambda: (cnn(), images()),
    "course CNN, in-place ReLU": lambda: (cnn(inplace=True), images()),
    "course CNN, evaluation mode": lambda: (cnn().eval(), images()),
    "MLP with every activation": lambda: (
        nn.Sequential(
            nn.Flatten(),
            nn.Linear(12, 16),
            nn.GELU(),
            nn.Linear(16, 16),
            nn.Sigmoid(),
            nn.Linear(16, 16),
            nn.Tanh(),
            nn.Linear(16, 16),
            nn.SiLU(),
            nn.Linear(16, 16),
            nn.LeakyReLU(),
            nn.Identity(),
            nn.Linear(16, 3),
        ),
        torch.randn(5, 3, 4),
    ),
    "1-d convolutions and pools": lambda: (
        nn.Sequential(
            nn.Conv1d(2, 6, 3, padding=1),
            nn.BatchNorm1d(6),
            nn.ReLU(),
            nn.MaxPool1d(2),
            nn.Conv1d(6, 6, 3),
            nn.AvgPool1d(2),
            nn.AdaptiveAvgPool1d(2),
            nn.Flatten(),
            nn.Linear(12, 2),
        ),
        torch.randn(4, 2, 20),
    ),
    "2-d pools to size 1 and more": lambda: (
        nn.Sequential(
            nn.Conv2d(3, 4, 3),
            nn.AdaptiveMaxPool2d(3),
            nn.AdaptiveAvgPool2d(2),
            nn.AvgPool2d(2),
            nn.Conv2d(4, 4, 1),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
            nn.Linear(4, 2),
        ),
        torch.randn(2, 3, 9, 9),
    ),
    "dropout and softmax heads": lambda: (
        nn.Sequential(
            nn.Linear(6, 8),
            nn.Dropout(0.5, inplace=True),  # after Linear: nothing saved its output
            nn.ReLU(),
            nn.Dropout(0.3),
            nn.Linear(8, 4),
            nn.Softmax(dim=1),
            nn.Linear(4, 4),
            nn.LogSoftmax(dim=1),
        ),
        torch.randn(5, 6),
    ),
    "dropout in evaluation mode": lambda: (
        nn.Sequential(nn.Linear(6, 8), nn.Dropout(0.3), nn.Linear(8, 2)).eval(),
        torch.randn(5, 6),
    ),
    "an input that requires grad": lambda: (
        nn.Sequential(nn.ReLU(), nn.Linear(6, 3)),
        torch.randn(4, 6, requires_grad=True),
    ),
}


@pytest.mark.parametrize("name", MODELS)
def test_estimated_activations_equal_the_bytes_autograd_saves(name):
    model, x = MODELS[name]()
    assert estimate(model, x).activations == saved_bytes(lambda: model(x), exclude=model) > 0


@pytest.mark.parametrize("name", ["course CNN", "MLP with every activation"])
@pytest.mark.parametrize(
    ("optimizer", "make"),
    [
        ("adam", lambda p: torch.optim.Adam(p)),
        ("adamw", lambda p: torch.optim.AdamW(p)),
        ("sgd-momentum", lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9)),
        ("sgd", lambda p: torch.optim.SGD(p, lr=0.1)),
    ],
)
def test_estimated_gradients_and_optimizer_state_equal_the_measured(name, optimizer, make):
    model, x = MODELS[name]()
    plan = estimate(model, x, optimizer)
    opt = make(model.parameters())
    model(x).square().mean().backward()
    opt.step()
    assert plan.parameters == storage_bytes([*model.parameters(), *model.buffers()])
    assert plan.gradients == storage_bytes([p.grad for p in model.parameters()])
    assert plan.optimizer_state == optimizer_state_bytes(opt)
    assert plan.total == sum(v for k, v in plan.rows().items() if k != "total")


def test_adam_keeps_two_copies_of_the_parameters():
    model, x = MODELS["course CNN"]()
    plan = estimate(model, x, "adam")
    tensors = len(list(model.parameters()))
    assert plan.optimizer_state == 2 * plan.gradients + 4 * tensors


def test_frozen_parameters_need_no_gradient_and_their_layer_saves_less():
    model, x = MODELS["MLP with every activation"]()
    model[1].requires_grad_(False)  # the first Linear: nothing upstream needs a gradient
    plan = estimate(model, x, "sgd")
    assert plan.gradients == sum(p.numel() * 4 for p in model.parameters() if p.requires_grad)
    assert activation_bytes_by_layer(model, x)["1"] == 0
    assert plan.activations == saved_bytes(lambda: model(x), exclude=model)


def test_activations_grow_with_the_batch():
    model = cnn()
    small, big = (estimate(model, images(n)).activations for n in (4, 16))
    bn_stats = 2 * 4 * sum(m.num_features for m in model.modules() if isinstance(m, nn.BatchNorm2d))
    assert big - bn_stats == 4 * (small - bn_stats)


def test_a_layer_without_a_rule_is_refused():
    model = nn.Sequential(nn.Conv2d(3, 3, 1), nn.Dropout2d(0.5))
    with pytest.raises(ValueError, match="no rule for Dropout2d"):
        estimate(model, torch.randn(2, 3, 4, 4))


def test_dropout_keeps_a_mask_of_the_input_dtype_on_a_cpu():
    x = torch.randn(8, 16, requires_grad=True)
    for p in (0.0, 0.25, 1.0):
        measured = saved_bytes(lambda p=p: F.dropout(x, p, training=True))
        assert dropout_mask_bytes(x, p) == measured
    assert dropout_mask_bytes(x, 0.25) == 8 * 16 * 4
    assert dropout_mask_bytes(x.detach().bfloat16(), 0.25) == 8 * 16 * 2
    assert dropout_mask_bytes(x, 0.25, training=False) == 0
    with pytest.raises(ValueError):
        dropout_mask_bytes(x, 1.5)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_dropout_keeps_a_bool_mask_on_cuda():
    x = torch.randn(8, 16, device="cuda", requires_grad=True)
    assert dropout_mask_bytes(x, 0.25) == 8 * 16 == saved_bytes(lambda: F.dropout(x, 0.25))


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ((nn.Linear(2, 2), torch.zeros(1, 2), "rmsprop"), ValueError),
        (("not a model", torch.zeros(1, 2)), TypeError),
        ((nn.Linear(2, 2), [0.0, 0.0]), TypeError),
    ],
)
def test_estimate_rejects_bad_input(args, error):
    with pytest.raises(error):
        estimate(*args)


def test_storage_bytes_counts_a_view_with_its_whole_storage_once():
    x = torch.zeros(10, 10)
    assert storage_bytes([x, x.t(), x[:2]]) == 400
    assert storage_bytes([x[:2].clone()]) == 80
    with pytest.raises(TypeError):
        storage_bytes([x, "x"])


def test_optimizer_state_is_empty_before_the_first_step_and_rejects_non_optimizers():
    assert optimizer_state_bytes(torch.optim.Adam(nn.Linear(2, 2).parameters())) == 0
    with pytest.raises(TypeError):
        optimizer_state_bytes(nn.Linear(2, 2))


def test_saved_tensors_are_held_until_backward_or_until_the_graph_dies():
    model, x = MODELS["course CNN"]()
    with SavedTensors(exclude=model) as saved:
        loss = model(x).sum()
        other = model(x).sum()
    assert saved.alive_bytes == saved.saved_bytes == sum(saved.by_dtype.values())
    assert torch.int64 in saved.by_dtype  # max-pool indices
    loss.backward()
    del loss
    assert 0 < saved.alive_bytes < saved.saved_bytes
    del other
    assert saved.alive_bytes == 0


def test_saving_through_the_meter_leaves_the_gradients_unchanged():
    model, x = MODELS["course CNN"]()
    model(x).sum().backward()
    plain = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    with SavedTensors(exclude=model):
        model(x).sum().backward()
    assert all(torch.equal(a, p.grad) for a, p in zip(plain, model.parameters(), strict=True))


def test_nothing_is_saved_without_autograd_and_in_place_errors_still_show():
    model, x = MODELS["course CNN"]()
    with torch.inference_mode():
        assert saved_bytes(lambda: model(x), exclude=model) == 0
    gate = nn.Sequential(nn.Linear(4, 4), nn.Sigmoid(), nn.ReLU(inplace=True))
    with SavedTensors(), pytest.raises(RuntimeError, match="modified by an inplace operation"):
        gate(torch.randn(2, 4)).sum().backward()
    with pytest.raises(TypeError):
        saved_bytes(model)  # type: ignore[arg-type]  # a module is callable, but needs x
    with pytest.raises(TypeError):
        saved_bytes(42)


def test_a_safe_in_place_relu_trains_under_the_meter():
    model, x = MODELS["course CNN, in-place ReLU"]()
    with SavedTensors(exclude=model) as saved:
        model(x).sum().backward()
    assert saved.saved_bytes > 0 and saved.alive_bytes == 0


def test_checkpointing_saves_less_and_its_inputs_are_counted():
    model, x = MODELS["course CNN"]()
    plain = saved_bytes(lambda: model(x), exclude=model)
    whole = saved_bytes(lambda: checkpoint(model, x, use_reentrant=False), exclude=model)
    assert whole == x.untyped_storage().nbytes()  # only the checkpoint's input is kept
    assert whole < plain


def test_allocated_bytes_follow_allocations_frees_and_the_peak():
    with AllocatedBytes() as mem:
        a = torch.zeros(1000)
        b = a + 1
        view, same = b[:10], b.add_(1)
        del b, view, same
        c = a.view(10, 100)
    assert (mem.max_allocated, mem.allocated) == (8000, 4000)
    assert c.shape == (10, 100)
    del a, c
    assert mem.allocated == 0


def test_in_place_preprocessing_halves_the_peak():
    pixels = torch.randint(0, 256, (16, 3, 8, 8), dtype=torch.uint8)
    out_of_place = peak_bytes(lambda: (pixels.float() / 255 - 0.5) / 0.25)
    in_place = peak_bytes(lambda: pixels.float().div_(255).sub_(0.5).div_(0.25))
    assert out_of_place == 2 * in_place == 2 * pixels.numel() * 4
    with pytest.raises(TypeError):
        peak_bytes("not callable")


def test_the_peak_of_a_training_step_is_close_to_the_estimate():
    model, x = MODELS["course CNN"]()
    plan = estimate(model, x, "sgd")
    peak = plan.parameters + peak_bytes(lambda: model(x).square().mean().backward())
    assert 0.8 < peak / plan.total < 1.2


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error without CUDA")
def test_cuda_peak_bytes_needs_cuda():
    with pytest.raises(RuntimeError, match="CUDA"):
        cuda_peak_bytes(lambda: None)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_peak_bytes_counts_what_the_allocator_hands_out():
    assert cuda_peak_bytes(lambda: torch.zeros(1024, 1024, device="cuda")) >= 4 * 2**20


def test_graph_nodes_counts_each_node_once():
    x = torch.ones(2, requires_grad=True)
    assert graph_nodes((x * 2).sum()) == 3
    y = x * 2
    assert graph_nodes(y + y) == 3  # AddBackward0, MulBackward0, AccumulateGrad
    assert graph_nodes(torch.ones(2)) == 0
    with pytest.raises(TypeError):
        graph_nodes(1.0)


def test_mib_rounds_to_two_decimals():
    assert mib(3 * 2**20) == "3.00 MiB"
    assert mib(22_120_320) == "21.10 MiB"


def batches():
    torch.manual_seed(1)
    return [(images(8), torch.randint(0, 2, (8,))) for _ in range(3)]


def right_mean_loss(model, data):
    with torch.inference_mode():
        return sum(F.cross_entropy(model(x), y).item() for x, y in data) / len(data)


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        (lambda model, data: ..., "returns nothing yet"),
        (lambda model, data: F.cross_entropy(model(data[0][0]), data[0][1]), "returns a tensor"),
        (lambda model, data: 1, "returns int"),
        (
            lambda model, data: sum(F.cross_entropy(model(x), y).item() for x, y in data) / 3,
            "autograd saved",
        ),
        (lambda model, data: right_mean_loss(model, data) + 0.1, "expected a mean loss"),
    ],
)
def test_the_evaluation_exercise_explains_a_wrong_answer(answer, problem):
    model = cnn()
    assert problem in evaluation_problem(answer, model, batches())
    assert model.training  # the check puts the mode back


def test_the_evaluation_exercise_accepts_the_solution():
    assert evaluation_problem(right_mean_loss, cnn(), batches()) is None


def block_and_pool_checkpointed(model, x):
    layers, i = list(model), 0
    while i < len(layers):
        if isinstance(layers[i], nn.Sequential):
            x = checkpoint(nn.Sequential(layers[i], layers[i + 1]), x, use_reentrant=False)
            i += 2
        else:
            x, i = layers[i](x), i + 1
    return x


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        (lambda model, x: ..., "returns ellipsis"),
        (lambda model, x: model, "returns Sequential"),
        (lambda model, x: model[:-1](x), "differs from model(x)"),
        (lambda model, x: model(x).detach(), "has no graph"),
        (lambda model, x: model(x), "more than 25%"),
    ],
)
def test_the_checkpointing_exercise_explains_a_wrong_answer(answer, problem):
    model, x = cnn(), images()
    assert problem in checkpointing_problem(answer, model, x, torch.randint(0, 2, (8,)))


def test_the_checkpointing_exercise_accepts_the_solution():
    model, x = cnn(), images()
    y = torch.randint(0, 2, (8,))
    assert checkpointing_problem(block_and_pool_checkpointed, model, x, y) is None
