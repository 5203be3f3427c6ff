# %% [markdown]
# # 07 · Object detection: recipes
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/pytorch-cookbook/pytorch-cookbook/blob/main/notebooks/cookbook/07_training_loop_detection_recipes.ipynb)
#
# **The cookbook of chapter 07, continued.** New to the topic? [The lesson](../07_training_loop.ipynb)
# teaches the training loop step by step; the chapter's
# [first cookbook notebook](07_training_loop_recipes.ipynb) answers the loop's everyday tasks.
# Here the loop trains a **detector**: a model that finds every object in an image and draws a
# box around it. What changes from classification is nearly all in the data: each image has its
# own number of boxes, the boxes must move with the image when it is flipped or cropped, and the
# model wants them in one format and counts its classes from 1. Each recipe shows one of those,
# with the error a mistake prints; the [recipe index](../RECIPES.md) and the
# [error index](../ERRORS.md) find the one you need.
#
# The data set is drawn here, offline, in a blink: shapes on a noisy background, each with its
# box and its label. A real one (COCO, Pascal VOC, your own labelled photos) gives the same thing
# per image, a picture and a list of boxes with labels; the code does not change. Run the first
# two sections (the data and the model), then any recipe; the recipes after
# [Train a detector](#Train-a-detector-and-read-its-losses) use the `model` it trains (about
# 30 s on a CPU).
#
# **Prerequisites:** [05](../05_datasets_dataloaders.ipynb) (datasets, `DataLoader`,
# transforms), [07](../07_training_loop.ipynb) (the training loop).
#
# **Run time:** about 40 s on a 2-core CPU · GPU optional.

# %%
import sys

if (
    "google.colab" in sys.modules
):  # Colab: install the course's helpers and what the notebooks import
    import subprocess

    spec = "pytorch-cookbook[notebooks] @ git+https://github.com/pytorch-cookbook/pytorch-cookbook"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", spec], check=True)

import copy
import time

import matplotlib.pyplot as plt
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset, default_collate
from torchvision import tv_tensors
from torchvision.models.detection import FasterRCNN, fasterrcnn_mobilenet_v3_large_320_fpn
from torchvision.models.detection.anchor_utils import AnchorGenerator
from torchvision.models.detection.faster_rcnn import FastRCNNPredictor, TwoMLPHead
from torchvision.ops import MultiScaleRoIAlign, box_convert
from torchvision.transforms import v2

from helpers.check import check, expect_error
from helpers.detection import SHAPES, SIZE, detection_collate, draw_scenes, match, show_detections
from helpers.env import setup
from helpers.exercises import ch07_detection

device = setup(seed=0)

# %% [markdown]
# ## What a detection data set gives: an image and a target per sample
#
# A classifier's sample is an image and one label. A detector's is an image and a **target**, a
# dict with one row per object:
#
# - `"boxes"`: a float tensor of shape `(N, 4)`, each row `(x1, y1, x2, y2)`: the top-left and
#   bottom-right corners, in pixels of the image as given (torchvision calls this format `XYXY`);
# - `"labels"`: an `int64` tensor of shape `(N,)`, the class of each box, **counted from 1**:
#   torchvision's detectors keep class 0 for "background", the regions with no object.
#
# `N` differs from image to image, and may be 0. `draw_scenes(n, seed)` makes `n` such samples:
# 1 to 3 squares and discs (labels 1 and 2) on a 96 × 96 noisy background.

# %%
train_scenes = draw_scenes(384, seed=0)
test_scenes = draw_scenes(96, seed=1)
image, target = train_scenes[0]
print(
    "image:", tuple(image.shape), image.dtype, f"values in [{image.min():.2f}, {image.max():.2f}]"
)
print("boxes:", target["boxes"].tolist())
print("labels:", target["labels"].tolist(), "→", [SHAPES[i] for i in target["labels"]])
counts = torch.bincount(torch.tensor([len(t["boxes"]) for _, t in train_scenes]), minlength=4)
print("training images with 1, 2, 3 boxes:", counts[1:].tolist())

# %%
first = train_scenes[:5]
figure = show_detections([i for i, _ in first], [t for _, t in first])
figure.suptitle("Five training images with their true boxes and labels", fontsize=10)
plt.show()


# %% [markdown]
# ## Build a small Faster R-CNN for a CPU
#
# torchvision's `FasterRCNN` puts a detector together from parts: a **backbone** that turns the
# image into a map of features (here a 3-layer CNN that divides each side by 8), a **region
# proposal network** that scores anchor boxes of a few sizes and shapes at every place of the map
# as object or background, and a **head** that crops the features of the best proposals
# (`MultiScaleRoIAlign`), classifies them and tightens their boxes. Its defaults are sized for
# photos of 800 pixels with dozens of objects (`min_size=800`, `max_size=1333`); these images
# have 96 pixels and at most 3 objects, so fewer proposals and samples make a step fast on a CPU.
# `num_classes` counts the background.

# %%
def build_detector(num_classes: int, width: int = 16, hidden: int = 128) -> FasterRCNN:
    """A small Faster R-CNN for SIZE × SIZE images: a 3-layer CNN backbone (stride 8), anchors
    of 16-32 pixels, a 2-layer box head; ``num_classes`` counts the background."""

    def block(c_in: int, c_out: int) -> list[nn.Module]:
        return [nn.Conv2d(c_in, c_out, 3, stride=2, padding=1), nn.BatchNorm2d(c_out), nn.ReLU()]

    backbone = nn.Sequential(
        *block(3, width // 2), *block(width // 2, width), *block(width, 2 * width)
    )
    backbone.out_channels = 2 * width  # FasterRCNN reads it to size the heads
    return FasterRCNN(
        backbone,
        rpn_anchor_generator=AnchorGenerator(
            sizes=((16, 24, 32),), aspect_ratios=((0.5, 1.0, 2.0),)
        ),
        box_roi_pool=MultiScaleRoIAlign(featmap_names=["0"], output_size=7, sampling_ratio=1),
        box_head=TwoMLPHead(2 * width * 7 * 7, hidden),
        box_predictor=FastRCNNPredictor(hidden, num_classes),
        min_size=SIZE,  # resize no image (the default scales the shorter side to 800)
        max_size=SIZE,
        rpn_pre_nms_top_n_train=300,  # fewer region proposals than for 800-pixel photos
        rpn_post_nms_top_n_train=100,
        rpn_pre_nms_top_n_test=150,
        rpn_post_nms_top_n_test=50,
        rpn_batch_size_per_image=128,  # fewer regions sampled per image: faster steps on a CPU
        box_batch_size_per_image=32,
    )


# %% [markdown]
# ## Give the detector boxes as `(x1, y1, x2, y2)` pixels
#
# Annotation files store boxes in several formats: COCO's JSON as `[x, y, width, height]`, YOLO's
# text files as the centre and the size in fractions of the image, Pascal VOC's XML as corners.
# torchvision's detectors take corners in pixels. A box given in another format is not
# refused as such: it is read as corners, and the model learns from wrong boxes, or, when a
# "corner" lands left of or above the other one, stops with the error below.

# %% [markdown]
# ### Pitfall: `All bounding boxes should have positive height and width`

# %%
coco_boxes = box_convert(target["boxes"], in_fmt="xyxy", out_fmt="xywh")  # as COCO stores them
print("COCO's [x, y, width, height]:", coco_boxes.tolist())

# %% [markdown]
# A detector for 2 classes, in training mode, refuses them:

# %%
torch.manual_seed(0)
model = build_detector(num_classes=1 + 2)  # background, square, disc
with expect_error(AssertionError, match="positive height and width"):
    model([image], [{"boxes": coco_boxes, "labels": target["labels"]}])

# %% [markdown]
# The message names the first bad box, after the model's own resizing (here none: `min_size`
# keeps 96 pixels; with the defaults an image's shorter side is scaled to 800 pixels, and the
# box with it, so the numbers in the message are not those of your file). Convert once, where the data set reads its annotations:
# `box_convert(boxes, in_fmt="xywh", out_fmt="xyxy")` (YOLO's `"cxcywh"` fractions: multiply by
# the image's width and height first). Boxes that pass through untouched are worse: a box read
# in the wrong format but with its corners in order trains on the wrong pixels without a word.
# (torchvision's `CocoDetection` data set, wrapped with
# `torchvision.datasets.wrap_dataset_for_transforms_v2`, returns its boxes converted already.)

# %%
fixed = box_convert(coco_boxes, in_fmt="xywh", out_fmt="xyxy")
losses = model([image], [{"boxes": fixed, "labels": target["labels"]}])
print("losses:", sorted(losses))
check(torch.equal(fixed, target["boxes"]), "xywh → xyxy gives back the corners exactly")

# %% [markdown]
# ## Batch images that have different numbers of boxes
#
# `DataLoader`'s default `collate_fn` stacks each field of the samples into one tensor. Images
# of one size stack; boxes do not, as soon as two images in a batch hold different numbers of
# objects.

# %% [markdown]
# ### Pitfall: `stack expects each tensor to be equal size` for boxes

# %%
with expect_error(RuntimeError, match="stack expects each tensor to be equal size"):
    default_collate([train_scenes[1], train_scenes[2]])
print("boxes per image:", [len(t["boxes"]) for _, t in train_scenes[1:3]])

# %% [markdown]
# torchvision's detectors take **a list of images and a list of targets** (the images may
# differ in size: the model resizes and pads them into one batch itself). So the collate function
# only regroups the samples: `detection_collate` turns `[(image, target), ...]` into
# `([images], [targets])`. Define it, and the `Dataset` class, in a `.py` module, not in the
# notebook and not as a `lambda`: with `num_workers > 0` on macOS and Windows, the workers are new
# processes that receive both pickled, and they can find neither a lambda nor a name defined only
# in the notebook.

# %%
loader = DataLoader(
    train_scenes,
    batch_size=8,
    shuffle=True,
    collate_fn=detection_collate,
    generator=torch.Generator().manual_seed(0),  # the same batches on every run
)
images, targets = next(iter(loader))
print(
    f"a batch: {len(images)} images, {len(targets)} targets;",
    "boxes per image:",
    [len(t["boxes"]) for t in targets],
)
check(
    len(images) == len(targets) == 8 and len({len(t["boxes"]) for t in targets}) > 1,
    "a batch of 8 images with different numbers of boxes: two lists, one target per image",
)

# %% [markdown]
# ## Flip and crop an image with its boxes: `transforms.v2` and `tv_tensors`
#
# The old transforms (`torchvision.transforms`) take one image and know nothing of boxes: a
# random flip moves the objects and leaves the boxes where the objects were. `transforms.v2` take
# the whole sample, image and target together, and change every part that is a `tv_tensors`
# type: wrap the image as `tv_tensors.Image` and the boxes as `tv_tensors.BoundingBoxes`, with
# their format and the image's size (`canvas_size`), and plain tensors such as the labels pass
# through unchanged.

# %%
sample = (
    tv_tensors.Image(image),
    {
        "boxes": tv_tensors.BoundingBoxes(target["boxes"], format="XYXY", canvas_size=(SIZE, SIZE)),
        "labels": target["labels"],
    },
)
flipped_image, flipped_target = v2.RandomHorizontalFlip(p=1.0)(sample)
print("boxes before:", target["boxes"].tolist())
print("boxes after: ", flipped_target["boxes"].tolist())
x1, y1, x2, y2 = target["boxes"][0].int().tolist()
f1, _, f2, _ = flipped_target["boxes"][0].int().tolist()
check(
    torch.equal(flipped_image[:, y1:y2, f1:f2], image[:, y1:y2, x1:x2].flip(-1)),
    "the flipped box holds the flipped pixels of the first object",
)

# %% [markdown]
# A crop or a zoom can cut an object out of the picture. Its box shrinks to a sliver or to
# nothing, which the detector then refuses (the pitfall above) or learns from.
# `v2.SanitizeBoundingBoxes()` removes boxes narrower or lower than `min_size` (1 pixel by
# default: raise it to drop slivers too) and **their labels**, which it finds under the key
# `"labels"` (other per-box entries, such as COCO's `"area"` and `"iscrowd"`, need its
# `labels_getter`); put it last, after the transforms that move boxes.

# %%
crop = v2.Compose(
    [v2.RandomResizedCrop(SIZE, scale=(0.1, 0.3), antialias=True), v2.SanitizeBoundingBoxes()]
)
torch.manual_seed(3)
crops = [crop(sample)[1] for _ in range(200)]
kept = [len(c["labels"]) for c in crops]
print(
    f"boxes kept after 200 random crops of an image with {len(target['boxes'])}:",
    {n: kept.count(n) for n in sorted(set(kept))},
)
check(
    kept.count(len(target["boxes"])) < len(kept)
    and min(kept) == 0
    and all(len(c["boxes"]) == len(c["labels"]) for c in crops),
    "some crops lose an object or both, and their labels go with them",
)

# %% [markdown]
# The same transform cleans annotations: a box drawn as a line or a point (zero width or
# height, a slip in a labelling tool) stops training with the pitfall's error above;
# `SanitizeBoundingBoxes` drops it with its label before the model sees it.

# %%
line_box = torch.tensor([[30.0, 40.0, 60.0, 40.0]])  # y1 == y2: no height
labelled = (
    tv_tensors.Image(image),
    {
        "boxes": tv_tensors.BoundingBoxes(
            torch.cat([target["boxes"], line_box]), format="XYXY", canvas_size=(SIZE, SIZE)
        ),
        "labels": torch.cat([target["labels"], torch.tensor([1])]),
    },
)
_, cleaned = v2.SanitizeBoundingBoxes()(labelled)
print(
    f"{len(labelled[1]['boxes'])} boxes given, {len(cleaned['boxes'])} kept:",
    cleaned["boxes"].tolist(),
)
check(
    torch.equal(cleaned["boxes"].as_subclass(torch.Tensor), target["boxes"]),
    "the box without height is gone, the others are kept",
)


# %% [markdown]
# A data set ties it together: it returns the sample already wrapped, and applies the transforms
# to the image and the target at once. Training below uses random left-right flips; the test
# images go in as they are. (The loaders here load in the notebook's own process, so a class
# defined in the notebook is fine; move it to a module before you add workers on macOS or
# Windows.)

# %%
class Scenes(Dataset):
    """Drawn scenes as (tv_tensors.Image, target with BoundingBoxes), transformed together."""

    def __init__(self, scenes: list[tuple], transforms: v2.Transform | None = None) -> None:
        self.scenes, self.transforms = scenes, transforms

    def __len__(self) -> int:
        return len(self.scenes)

    def __getitem__(self, index: int) -> tuple:
        image, target = self.scenes[index]
        boxes = tv_tensors.BoundingBoxes(target["boxes"], format="XYXY", canvas_size=(SIZE, SIZE))
        sample = tv_tensors.Image(image), {"boxes": boxes, "labels": target["labels"]}
        return self.transforms(sample) if self.transforms else sample


augment = v2.Compose([v2.RandomHorizontalFlip(), v2.SanitizeBoundingBoxes()])
print("a sample's target:", {k: type(v).__name__ for k, v in Scenes(train_scenes)[0][1].items()})


# %% [markdown]
# ## Train a detector and read its losses
#
# In training mode a torchvision detector takes images **and** targets and returns a dict of
# four losses, which you add: how well the region proposal network (RPN) tells objects from
# background (`loss_objectness`) and places its proposals (`loss_rpn_box_reg`), and how well the
# head classifies each proposal (`loss_classifier`) and tightens its box (`loss_box_reg`). The
# rest is chapter 07's loop; it moves every tensor of every target to the device, not only the
# images.

# %%
def fit_detector(model: nn.Module, loader: DataLoader, epochs: int, lr: float) -> list[dict]:
    """Train ``model`` with SGD and a one-cycle schedule; return each epoch's mean losses.
    Parameters with ``requires_grad=False`` stay as they are, and so do the BatchNorm
    statistics of a frozen backbone."""
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.SGD(trainable, lr=lr, momentum=0.9, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, lr, total_steps=epochs * len(loader))
    frozen = not any(p.requires_grad for p in model.backbone.parameters())
    history = []
    for _ in range(epochs):
        model.train()
        if frozen:
            model.backbone.eval()  # requires_grad=False does not stop BatchNorm's statistics
        sums: dict[str, float] = {}
        for images, targets in loader:
            images = [i.to(device) for i in images]
            targets = [{k: v.to(device) for k, v in t.items()} for t in targets]
            losses = model(images, targets)
            loss = sum(losses.values())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            scheduler.step()
            for name, value in losses.items():
                sums[name] = sums.get(name, 0.0) + value.item() / len(loader)
        history.append(sums)
    return history


torch.manual_seed(0)
model = build_detector(num_classes=1 + 2).to(device)
train_set = Scenes(train_scenes, augment)
loader = DataLoader(train_set, batch_size=8, shuffle=True, collate_fn=detection_collate)
began = time.perf_counter()
history = fit_detector(model, loader, epochs=8, lr=0.04)
train_seconds = time.perf_counter() - began

# %% tags=["nbval-ignore-output"]
for epoch, sums in enumerate(history, 1):
    print(f"epoch {epoch}: " + " · ".join(f"{k} {v:.3f}" for k, v in sums.items()))
print(f"{len(history)} epochs in {train_seconds:.1f} s")

# %%
first_total, last_total = sum(history[0].values()), sum(history[-1].values())
check(
    last_total < 0.5 * first_total,
    "the summed loss falls by more than half",
    measured=f"{first_total:.3f} → {last_total:.3f}",
)

# %% [markdown]
# ### Pitfall: `targets should not be none when in training mode`
#
# (This and the recipes below use the `model` trained above.) A detector in training mode needs
# targets, so evaluating without `model.eval()` stops here. In evaluation mode it returns, for
# each image, a dict of `boxes`, `labels` and `scores`: sorted by score, after non-maximum
# suppression, and only those scored above `box_score_thresh` (0.05 unless you set it).

# %%
test_images = [i.to(device) for i, _ in test_scenes]
with expect_error(AssertionError, match="targets should not be none"):
    model(test_images)

# %%
model.eval()
with torch.no_grad():
    predictions = [{k: v.cpu() for k, v in p.items()} for p in model(test_images)]
print("each image's prediction:", {k: str(v.dtype) for k, v in predictions[0].items()})
print("score threshold:", model.roi_heads.score_thresh)


# %% [markdown]
# ### Validation loss of a detector: training mode, no gradients, BatchNorm frozen
#
# Only training mode returns losses, so a validation loss is computed in training mode under
# `torch.no_grad()`. One catch: in training mode, `BatchNorm` layers update their running
# statistics with every batch, here with the validation images. Put them in evaluation mode for
# the pass. (torchvision's Faster R-CNN builders given COCO weights freeze the backbone's
# BatchNorm as `FrozenBatchNorm2d`, but not all of them: the `_v2` models keep `BatchNorm2d`.)
# The number varies a little from call to call, since training mode samples the proposals it
# scores at random; compare it across epochs, not to the third digit. One call cannot give both
# the losses and the detections (training mode returns only losses, evaluation mode only
# detections), so a validation epoch that reports both runs its images twice: once as below,
# once in evaluation mode for the boxes that recall and precision are counted from.

# %%
def validation_losses(model: nn.Module, scenes: list[tuple]) -> dict[str, float]:
    """The detector's four losses on ``scenes``, leaving its weights, statistics and mode as
    they were."""
    was_training = model.training
    model.train()
    for module in model.modules():
        if isinstance(module, (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)):
            module.eval()
    images, targets = detection_collate(scenes)
    with torch.no_grad():
        losses = model(
            [i.to(device) for i in images],
            [{k: v.to(device) for k, v in t.items()} for t in targets],
        )
    model.train(was_training)
    return {name: value.item() for name, value in losses.items()}


state_before = {k: v.clone() for k, v in model.state_dict().items()}
val_losses = validation_losses(model, test_scenes)
unchanged = all(torch.equal(v, model.state_dict()[k]) for k, v in state_before.items())
unchanged = unchanged and not model.training  # still in evaluation mode

# %% tags=["nbval-ignore-output"]
print("validation losses:", " · ".join(f"{k} {v:.3f}" for k, v in val_losses.items()))
print("training losses, last epoch:", " · ".join(f"{k} {v:.3f}" for k, v in history[-1].items()))

# %%
check(unchanged, "the validation pass left every weight, running statistic and the mode as it was")

# %% [markdown]
# ### Pitfall: `Expected input images to be of floating type (in range [0, 1])`
#
# The model normalises the images itself (its `transform` holds `image_mean` and `image_std`), so
# it takes floats in [0, 1]: not `uint8` pixels as read from a file, and not images already
# normalised with a data set's mean and standard deviation (that would normalise twice, without
# an error). `v2.ToDtype(torch.float32, scale=True)` turns pixels into such floats, in the
# data set's transforms.

# %%
pixels = (test_images[0] * 255).to(torch.uint8)  # as decode_image reads a file
with expect_error(TypeError, match="floating type"):
    model([pixels])
with torch.no_grad():
    (from_pixels,) = model([v2.ToDtype(torch.float32, scale=True)(pixels)])
check(from_pixels["boxes"].shape[1] == 4, "scaled to floats in [0, 1], the pixels are taken")

# %% [markdown]
# How good is it? A prediction is right when it has a true box's label and overlaps that box by
# an **IoU** (intersection over union) of at least 0.5; `match` counts the true boxes found
# (recall) and the predictions that are right (precision), keeping predictions scored 0.5 or
# more, each true box found at most once. (COCO's mAP is the area under the precision-recall
# curve, averaged over the classes and over IoU thresholds from 0.50 to 0.95; `torchmetrics`'
# `MeanAveragePrecision` computes it, with `pycocotools` installed.)

# %% tags=["nbval-ignore-output"]
scores = match(predictions, [t for _, t in test_scenes])
print(f"test: {scores['boxes']} true boxes, {scores['predictions']} predictions scored ≥ 0.5")
print(f"recall {scores['recall']:.1%} · precision {scores['precision']:.1%}")

# %%
check(
    scores["recall"] >= 0.75 and scores["precision"] >= 0.75,
    "it finds ≥ 75% of the test objects, and ≥ 75% of what it reports is right",
    measured=f"recall {scores['recall']:.1%}, precision {scores['precision']:.1%}",
)

# %%
figure = show_detections(test_images[:5], predictions[:5])
figure.suptitle("Five test images with the detector's boxes (score ≥ 0.5)", fontsize=10)
plt.show()

# %% [markdown]
# ## Fine-tune a detector for new classes
#
# A detector trained on COCO is fine-tuned for your classes by replacing its last layer, the
# box predictor, with one for your number of classes **plus one** for the background; the
# backbone, which already knows edges and shapes, is partly or wholly frozen at first (given
# weights, the builders train only its last 3 stages: `trainable_backbone_layers`). torchvision's
# builders download the COCO weights with `weights="DEFAULT"`; this notebook runs offline, so it
# builds the same model without them and shows the one change. (COCO's predictor has 91 outputs:
# the background and COCO's category ids 1 to 90, of which 80 are used.)

# %%
coco_model = fasterrcnn_mobilenet_v3_large_320_fpn(weights=None, weights_backbone=None)
# With internet: fasterrcnn_mobilenet_v3_large_320_fpn(weights="DEFAULT")
in_features = coco_model.roi_heads.box_predictor.cls_score.in_features
print("COCO's predictor:", coco_model.roi_heads.box_predictor.cls_score)
coco_model.roi_heads.box_predictor = FastRCNNPredictor(in_features, num_classes=1 + 3)
print("yours:           ", coco_model.roi_heads.box_predictor.cls_score)
triangle = {"boxes": torch.tensor([[20.0, 20.0, 60.0, 70.0]]), "labels": torch.tensor([3])}
coco_model.train()
losses = coco_model([image], [triangle])  # one training step's losses, for label 3
check(
    all(torch.isfinite(v) for v in losses.values()),
    "the new predictor trains on label 3 (3 classes + background)",
)

# %% [markdown]
# ### Pitfall: `Target 3 is out of bounds`
#
# The classic slip: `num_classes` set to the number of your classes, forgetting the background.
# The last class's label is then past the predictor's outputs, and the classification loss stops
# (on a GPU, the same slip stops with `CUDA error: device-side assert triggered`).

# %%
coco_model.roi_heads.box_predictor = FastRCNNPredictor(in_features, num_classes=3)  # no background
with expect_error(IndexError, match="out of bounds"):
    coco_model([image], [triangle])

# %% [markdown]
# The detector trained above plays the pretrained one. Its new task: triangles too (label 3),
# from only 64 labelled images. Its predictor is replaced (3 outputs → 4), its backbone frozen:
# `requires_grad_(False)` stops the weights, and `fit_detector` keeps the backbone in evaluation
# mode so that its BatchNorm statistics stay too. For comparison, the same detector trained from
# scratch on the same 64 images, for as many steps.

# %%
few_scenes = draw_scenes(64, seed=2, labels=(1, 2, 3))  # squares, discs and triangles
new_test = draw_scenes(96, seed=3, labels=(1, 2, 3))
few_loader = DataLoader(
    Scenes(few_scenes, augment), batch_size=8, shuffle=True, collate_fn=detection_collate
)

finetuned = copy.deepcopy(model)  # the trained detector, kept as it is for the cells above
features = finetuned.roi_heads.box_predictor.cls_score.in_features  # read, as above
finetuned.roi_heads.box_predictor = FastRCNNPredictor(features, num_classes=1 + 3).to(device)
finetuned.backbone.requires_grad_(False)
torch.manual_seed(0)
fit_detector(finetuned, few_loader, epochs=12, lr=0.04)

torch.manual_seed(0)
scratch = build_detector(num_classes=1 + 3).to(device)
fit_detector(scratch, few_loader, epochs=12, lr=0.04)


def scores_on(model: nn.Module, scenes: list[tuple]) -> dict[str, float]:
    """``match`` on ``scenes``: the model's predictions against their true boxes."""
    model.eval()
    with torch.no_grad():
        found = model([i.to(device) for i, _ in scenes])
    return match([{k: v.cpu() for k, v in p.items()} for p in found], [t for _, t in scenes])


after = {"fine-tuned": scores_on(finetuned, new_test), "from scratch": scores_on(scratch, new_test)}
triangles = [(i, {k: v[t["labels"] == 3] for k, v in t.items()}) for i, t in new_test]
finetuned.eval()
with torch.no_grad():
    found = finetuned([i.to(device) for i, _ in new_test])
only_triangles = [{k: v[p["labels"] == 3].cpu() for k, v in p.items()} for p in found]
triangle_recall = match(only_triangles, [t for _, t in triangles])["recall"]
steps = 12 * len(few_loader)

# %% tags=["nbval-ignore-output"]
print(f"each trained for {steps} steps on {len(few_scenes)} images")
for name, result in after.items():
    print(
        f"{name:>12}: recall {result['recall']:.1%} · precision {result['precision']:.1%}"
        f" ({result['predictions']} predictions for {result['boxes']} objects)"
    )
print(f"fine-tuned, triangles alone: recall {triangle_recall:.1%}")

# %% [markdown]
# From scratch, 64 images and so few steps are far too few; from the trained detector they are
# enough to find most objects, the new triangles included. Read its precision too: a real
# project would now label more images, unfreeze the backbone for a few epochs at a lower
# learning rate, and measure both again.

# %%
check(
    after["fine-tuned"]["recall"] >= 0.6
    and triangle_recall >= 0.4
    and after["fine-tuned"]["recall"] >= after["from scratch"]["recall"] + 0.3,
    "from 64 images, the fine-tuned detector finds ≥ 60% of the objects and ≥ 40% of the "
    "triangles, ≥ 30 points more than the same detector trained from scratch",
    measured=f"{after['fine-tuned']['recall']:.1%} (triangles {triangle_recall:.1%}) vs "
    f"{after['from scratch']['recall']:.1%}",
)

# %% [markdown]
# ## Segmentation targets: a mask through `v2` transforms, batched, into `cross_entropy`
#
# Semantic segmentation labels every pixel: the target is a **mask**, an `(H, W)` tensor of
# class numbers (0 for the background here, and often 255 for pixels nobody labelled). It must
# move with the image under every flip and crop, and a resize must never blend two class numbers
# into a third. Wrap it as `tv_tensors.Mask` and pass it in the same call as the image: `v2`
# transforms then apply the image's random flip and crop to it too, resized with nearest
# neighbours. (A plain tensor passed next to an `Image` is returned untouched: no error, just
# misaligned; a plain tensor on its own is treated as an image and blended.) Below, a mask made
# from the first scene's boxes (each box's pixels get its label: a stand-in for a drawn mask) with
# a two-pixel band marked 255 round each object, as Pascal VOC marks object outlines:

# %%
scene_mask = torch.zeros(SIZE, SIZE, dtype=torch.int64)
for (x1, y1, x2, y2), label in zip(
    target["boxes"].int().tolist(), target["labels"].tolist(), strict=True
):
    scene_mask[max(y1 - 2, 0) : y2 + 2, max(x1 - 2, 0) : x2 + 2] = 255  # not labelled: skipped
    scene_mask[y1:y2, x1:x2] = label  # 0: background
seg_augment = v2.Compose(
    [v2.RandomResizedCrop(SIZE, scale=(0.3, 1.0), antialias=True), v2.RandomHorizontalFlip()]
)
torch.manual_seed(0)
seg_image, seg_mask = seg_augment(tv_tensors.Image(image), tv_tensors.Mask(scene_mask))
torch.manual_seed(0)  # the same draws again, the mask as an image resized with nearest neighbours
nearest = v2.Compose(
    [
        v2.RandomResizedCrop(SIZE, scale=(0.3, 1.0), interpolation=v2.InterpolationMode.NEAREST),
        v2.RandomHorizontalFlip(),
    ]
)
as_image, as_mask = nearest(tv_tensors.Image(scene_mask[None]), tv_tensors.Mask(scene_mask))
blended = v2.Resize(SIZE // 2, antialias=True)(scene_mask[None].to(torch.uint8))  # plain: an image
print("classes in the mask:", scene_mask.unique().tolist(), end=" | ")
print("after the crop:", seg_mask.unique().tolist())
print("the mask resized as a plain tensor holds", blended.unique().numel(), "values:", end=" ")
print(blended.unique().tolist()[:8], "...")
check(
    isinstance(seg_mask, tv_tensors.Mask)
    and 255 in seg_mask.unique().tolist()
    and set(seg_mask.unique().tolist()) <= set(scene_mask.unique().tolist())
    and torch.equal(as_image[0], as_mask)
    and blended.unique().numel() > len(scene_mask.unique()),
    "a Mask gets the image's crop and flip and keeps its class numbers; as a plain tensor it is "
    "blended",
)

# %% [markdown]
# Masks of one size batch like images: `default_collate` stacks them into `(N, H, W)` (plain
# tensors once batched). `cross_entropy` takes the logits as `(N, C, H, W)` and the masks as
# `(N, H, W)` class numbers (`int64`), one loss per pixel, and `ignore_index=255` leaves the
# unlabelled pixels out of the mean. The usual mistake is a mask with a channel dimension,
# `(N, 1, H, W)`, as an image reader returns it:

# %%
torch.manual_seed(0)
seg_batch = [seg_augment(tv_tensors.Image(image), tv_tensors.Mask(scene_mask)) for _ in range(4)]
images_b, masks_b = default_collate(seg_batch)
seg_logits = torch.randn(4, len(SHAPES), SIZE, SIZE)  # a model's output; SHAPES has background
seg_loss = nn.functional.cross_entropy(seg_logits, masks_b, ignore_index=255)
labelled = masks_b != 255
by_hand = nn.functional.cross_entropy(seg_logits.permute(0, 2, 3, 1)[labelled], masks_b[labelled])
print("images", tuple(images_b.shape), "| masks", tuple(masks_b.shape), masks_b.dtype, end=" | ")
print(f"{(~labelled).sum().item()} pixels marked 255")
print(f"loss {seg_loss.item():.4f}, by hand over the labelled pixels {by_hand.item():.4f}")
with expect_error(RuntimeError, match="spatial targets"):
    nn.functional.cross_entropy(seg_logits, masks_b[:, None], ignore_index=255)  # (N, 1, H, W)
check(
    bool((~labelled).any()) and torch.isclose(seg_loss, by_hand),
    "cross_entropy with ignore_index is the mean over the labelled pixels only",
)

# %% [markdown]
# The fix for that error is `masks.squeeze(1)` (or reading the mask as `(H, W)`). Masks of
# floats give `expected target dtype to be Long or Byte`
# ([cookbook 13](13_reproducibility_debugging_recipes.ipynb#Fix-a-dtype-mismatch:-Double-from-NumPy,-Long-and-Float-targets)
# shows it) and masks of `uint8` `expected scalar type Long but found Byte`: `.long()` them.
# Without `ignore_index=255`, a 255 pixel raises `Target 255 is out of bounds` (on a GPU, a
# device-side assert). A mask saved as a palette PNG (VOC's) holds class indices with a colour
# table: read the indices (Pillow keeps mode `P`, and `np.array` of it gives them), not the
# colours that a conversion to RGB or grey gives. Rotations and padding fill a `Mask` with 0,
# the background; `fill={tv_tensors.Image: 0, tv_tensors.Mask: 255}` marks the new pixels void.
# A segmentation model returns `(N, C, H, W)` logits (torchvision's `deeplabv3_mobilenet_v3_large`
# inside a dict: `model(x)["out"]`); `logits.argmax(dim=1)` is its predicted mask. Mask R-CNN
# takes instead one binary mask per object, `target["masks"]` of shape `(objects, H, W)`.

# %% [markdown]
# ## Old code you will meet
#
# | old form | write today | why |
# |---|---|---|
# | `fasterrcnn_resnet50_fpn(pretrained=True)` | `fasterrcnn_resnet50_fpn(weights="DEFAULT")` | `pretrained` is deprecated since torchvision 0.13 and warns |
# | `torchvision.transforms` on the image, boxes flipped by hand | `transforms.v2` on `(tv_tensors.Image, {"boxes": tv_tensors.BoundingBoxes(...)})` | v2 moves boxes with the pixels, and `SanitizeBoundingBoxes` drops the ones cropped away |
# | `torchvision.datapoints` (torchvision 0.15, beta) | `torchvision.tv_tensors` | renamed in 0.16 |
# | `collate_fn=lambda batch: tuple(zip(*batch))` in the notebook | a function such as `detection_collate`, and the `Dataset`, in a `.py` module | workers started as new processes (macOS, Windows) receive them pickled: they cannot find a lambda or a name defined only in the notebook |

# %% [markdown]
# ## Exercises

# %% [markdown]
# ### Exercise 1 · Turn COCO annotations into a target
#
# A COCO-style file gives each image a list of annotations such as
# `{"bbox": [x, y, width, height], "category_id": 0}`, with categories counted **from 0**.
# Write `to_target(annotations)`: the target a torchvision detector takes, `{"boxes": ...,
# "labels": ...}`, boxes as float32 corners `(x1, y1, x2, y2)` and labels as int64 counted from 1.
# The check tries images with several objects, one object, and none.
#
# <details><summary>Hint 1</summary>
#
# `box_convert(boxes, in_fmt="xywh", out_fmt="xyxy")` converts; the labels are the categories
# shifted by one.
# </details>
#
# <details><summary>Hint 2</summary>
#
# An image without objects still needs boxes of shape `(0, 4)`: `torch.tensor([])` has shape
# `(0,)`, which the detector refuses. `torch.zeros(0, 4)` or `.reshape(-1, 4)` gives the right one.
# </details>

# %%
to_target = ...  # a function (list of annotation dicts) -> {"boxes": ..., "labels": ...}

# %%
ch07_detection.exercise_1(to_target)


# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
def solution_to_target(annotations: list[dict]) -> dict[str, torch.Tensor]:
    """COCO annotations (xywh boxes, categories from 0) → a detector's target."""
    boxes = torch.tensor([a["bbox"] for a in annotations], dtype=torch.float32).reshape(-1, 4)
    labels = torch.tensor([a["category_id"] + 1 for a in annotations], dtype=torch.int64)
    return {"boxes": box_convert(boxes, in_fmt="xywh", out_fmt="xyxy"), "labels": labels}


ch07_detection.exercise_1(solution_to_target)

# %% [markdown]
# ### Exercise 2 · Flip boxes by hand
#
# Old code flips the boxes itself. Write `flip_boxes(boxes, width)`: the `(N, 4)` XYXY boxes of
# an image `width` pixels wide, after the image is flipped left to right. The check compares it
# with `v2.RandomHorizontalFlip(p=1.0)` on random boxes and image widths.
#
# <details><summary>Hint 1</summary>
#
# A point at `x` goes to `width - x`. Which corner becomes the left one?
# </details>
#
# <details><summary>Hint 2</summary>
#
# `x1` and `x2` swap roles: the new `x1` is `width - x2`, the new `x2` is `width - x1`; `y` does
# not change. Return a new tensor: the caller's boxes stay as they were.
# </details>

# %%
flip_boxes = ...  # a function (boxes, width) -> the flipped boxes

# %%
ch07_detection.exercise_2(flip_boxes)


# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
def solution_flip_boxes(boxes: torch.Tensor, width: int) -> torch.Tensor:
    """XYXY boxes of an image ``width`` pixels wide, after a left-right flip."""
    x1, y1, x2, y2 = boxes.unbind(dim=1)
    return torch.stack([width - x2, y1, width - x1, y2], dim=1)


ch07_detection.exercise_2(solution_flip_boxes)

# %% [markdown]
# ## On a GPU
#
# The cells above run on a GPU as they are (`device` is the GPU when there is one): the training
# loop moves the images and **every tensor of every target** to `device`, since a target left
# on the CPU stops the model with a device mismatch, and the pictures and scores bring the
# predictions back to the CPU. For mixed precision, wrap the call that returns the losses in
# `torch.autocast`, as [chapter 07's recipe](07_training_loop_recipes.ipynb#Train-in-mixed-precision-with-autocast-and-GradScaler,-unscaling-before-clipping)
# does for a classifier, and time it on your GPU before you keep it.

# %% [markdown]
# ## Summary
#
# - A detection sample is an image and a target: `"boxes"` `(N, 4)` float corners
#   `(x1, y1, x2, y2)` in pixels, `"labels"` `(N,)` int64 counted from 1 (0 is the background);
#   `N` may be 0, with boxes of shape `(0, 4)`.
# - Convert boxes from COCO's `xywh` or YOLO's `cxcywh` with `box_convert` where you read them; a
#   box whose corners come out reversed stops training with "All bounding boxes should have
#   positive height and width".
# - Batch with a `collate_fn` that returns lists (`detection_collate`): the default one cannot
#   stack different numbers of boxes.
# - `transforms.v2` move `tv_tensors.BoundingBoxes` with the image; end with
#   `SanitizeBoundingBoxes` after crops.
# - Fine-tune a torchvision detector by replacing `roi_heads.box_predictor` with one for your
#   classes + 1 (without the + 1: "Target N is out of bounds"), and freeze the backbone at
#   first, its BatchNorm statistics included. In training mode it returns four losses to add;
#   in evaluation mode, boxes, labels and scores. It takes float images in [0, 1] and
#   normalises them itself.
# - A validation loss needs training mode under `torch.no_grad()`, with BatchNorm in evaluation
#   mode. Judge the detector by recall and precision at an IoU threshold (or COCO's mAP), not by
#   its loss.
#
# Next: [08 · TensorBoard](../08_tensorboard.ipynb).
