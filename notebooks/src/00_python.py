# %% [markdown]
# # 00 · Python you will meet
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/pytorch-cookbook/pytorch-cookbook/blob/main/notebooks/00_python.ipynb)
#
# The lessons expect Python's lists, slices and functions. Along the way they also use a dozen
# constructs that a first Python course often skips: classes that call `super()`, generators,
# `lambda` and closures, decorators, `*` and `**`, `with` blocks, f-string formats, `del`,
# scripts with `__main__`. This notebook shows each one in a few lines, with no PyTorch, so
# that a lesson can use it without stopping. Read it before 01, or come back when a lesson
# links here.
#
# **You will be able to:**
# - write a class with `__init__`, a method and `__call__`, and extend it with `super()`
# - pass functions around: `lambda`, closures and decorators
# - write a generator with `yield`, and say what a `with` block does on the way out
# - unpack with `*` and `**`, and format numbers in f-strings (`:.3f`, `:>8`, `:,`)
# - tell a name from the object it names (`del`, changes in place), and read a script's
#   `__main__` guard, `argparse` and `try`/`except`
#
# **Before you start:** Python's lists, slices, dictionaries, loops, list comprehensions
# (`[x * 2 for x in xs]`) and functions (`def`, arguments with defaults, `return`). Nothing from
# the other lessons.
#
# **Study time:** about 70 min: 1,917 words of text at 120 a minute, 143 lines of code at 10 a minute, 20 code cells to run at 1 minute each (reading what they print), 2 exercises at 10 minutes each.
#
# **Run time:** about 5 s on a 2-core CPU · GPU optional.

# %%
import sys

if (
    "google.colab" in sys.modules
):  # Colab: install the course's helpers and what the notebooks import
    import subprocess

    spec = "pytorch-cookbook[notebooks] @ git+https://github.com/pytorch-cookbook/pytorch-cookbook"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", spec], check=True)

import argparse
import functools

from helpers.check import check, expect_error
from helpers.env import setup
from helpers.exercises import lesson00

device = setup(seed=0)  # the first line of every notebook: versions, device, a fixed seed

# %% [markdown]
# A notebook's cells run in its **kernel**, the Python process behind it: what a cell defines
# stays there for the next cells, and restarting the kernel (Kernel → Restart, or Colab's
# Runtime → Restart session) clears it all. The first cell of every notebook imports what it
# uses and calls the course's `setup`, which
# prints the versions and the device (CPU or GPU) and fixes the **seed** of the random number
# generators: a random draw then gives the same numbers on every run (13 shows how far that
# goes).
#
# The course checks what it says. `check(ok, claim)` prints `✓ claim` when `ok` is true and
# stops the notebook with `✗ claim` when it is not; `expect_error` runs a block that should fail
# and prints the error in one line, `⛔ Type: message` (`expect_warning` does the same for a
# block that should warn, `⚠ Category: message`). They come from the course's `helpers`
# package (its `check` module, a few lines each); without them you would write
# `assert ok, claim`. A check can also name the number it judged, `measured=...`, which a `✗`
# line shows; a check about speed says `timing=True`, because speed depends on the machine: on
# yours, a miss prints `✗` with that number and the notebook goes on. You will meet them in
# every notebook:

# %%
check(1 + 1 == 2, "one and one make two")


# %% [markdown]
# ## Classes: `__init__`, `__call__` and `super`
#
# A **class** bundles data with the functions that use it. `__init__` runs when an object is
# made and stores its data on `self`; a **method** is a function defined in the class, called on
# an object; `__call__` makes the object callable like a function. Lesson
# [04](04_modules.ipynb)'s models are classes of this kind: `model(x)` calls `model.__call__`,
# which runs the `forward` method you wrote.

# %%
class Scale:
    """Multiply by a fixed factor."""

    def __init__(self, factor):
        self.factor = factor  # data stored on the object

    def __call__(self, x):
        return x * self.factor


double = Scale(2)
print(
    f"double.factor = {double.factor}, double(21) = {double(21)}, Scale(10)(0.5) = {Scale(10)(0.5)}"
)


# %% [markdown]
# A class can **inherit** from another: it gets every method of its parent and may replace some.
# `super()` reaches the parent's version, so a child adds to it instead of copying it. In 04,
# `super().__init__()` is the first line of every model's `__init__`: it sets up what
# `nn.Module` needs before the model adds its layers.

# %%
class ScaleThenShift(Scale):
    """Multiply, then add a fixed shift."""

    def __init__(self, factor, shift):
        super().__init__(factor)  # the parent stores the factor
        self.shift = shift

    def __call__(self, x):
        return super().__call__(x) + self.shift


affine = ScaleThenShift(2, 1)
print(f"affine(3) = {affine(3)}; a Scale too: {isinstance(affine, Scale)}")
check(affine(3) == 2 * 3 + 1, "ScaleThenShift multiplies (its parent's call), then shifts")

# %% [markdown]
# ## Functions are values: `lambda`, closures, decorators
#
# A function is an object like any other: it can be stored, passed, returned. `lambda x: x + 1`
# is a function without a name, written where it is needed, usually as an argument (11 measures
# memory with `saved_bytes(lambda: model(x))`: the function to run, not its result). A function
# defined inside another **closes over** the outer function's names: it keeps them after the
# outer function returns, which is how 10's `make_step()` builds a training step. To change such
# a name (not only read it), the inner function declares it `nonlocal`.

# %%
by_length = sorted(["ccc", "a", "bb"], key=lambda word: len(word))


def make_counter(start):
    count = start

    def step():
        nonlocal count  # the inner function changes the outer function's name
        count += 1
        return count

    return step


counter = make_counter(10)
print(f"sorted by length: {by_length}; counter() twice: {counter()}, {counter()}")
check(counter() == 13, "the closure keeps its own count between calls")


# %% [markdown]
# A **decorator** is a function that takes a function and returns a new one; `@name` on the line
# above a `def` applies it, and `@name(args)` first calls `name(args)`, which returns the
# decorator. `@app.post("/predict")` (12) is one: it registers the function below as the answer
# to a web request. Below, `functools.wraps(fn)` makes a decorator that copies `fn`'s name and
# docstring onto the new function. `*args, **kwargs` take any arguments and pass them on
# unchanged (the section on unpacking below says how).

# %%
def logged(fn):
    """Return ``fn`` wrapped so that each call also prints what it was called with."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        print(f"calling {fn.__name__} with {args} {kwargs}")
        return fn(*args, **kwargs)

    return wrapper


@logged
def add(a, b):
    return a + b


total = add(2, b=3)
check(total == 5 and add.__name__ == "add", "the decorated add still adds, under its own name")


# %% [markdown]
# `@staticmethod` (09) is a decorator too: it keeps a plain function inside a class, called
# without an object and given no `self`:

# %%
class Units:
    @staticmethod
    def to_mib(nbytes):
        return nbytes / 2**20


check(Units.to_mib(3 * 2**20) == 3, "a static method is called on the class, with no self")


# %% [markdown]
# `async def` (12's server) defines a function that can pause at each `await` while other
# requests run. Calling it does not run it: it returns a coroutine, which the server's event
# loop runs.

# %%
async def answer():
    return 42


coroutine = answer()
print(f"answer() returned a {type(coroutine).__name__}, not 42")
coroutine.close()  # not run here: a server's event loop would run it


# %% [markdown]
# ## Generators and `with` blocks
#
# A **generator** function uses `yield` instead of `return`: calling it gives an object that
# produces the values one at a time, running the function's body only as far as the next
# `yield`. A `for` loop asks for values until there are none; `next(...)` asks for one.
# (`iter(x)` gives an object to ask, an **iterator**, for anything a `for` loop can walk through, such as a list
# or a DataLoader: `next(iter(loader))` is a loader's first batch.) 05 writes a loader of its own
# with `yield`, and a DataLoader hands out batches the same way.

# %%
def squares(n):
    for i in range(n):
        yield i * i


gen = squares(4)
print(f"next: {next(gen)}, next: {next(gen)}, the rest: {list(gen)}")
endless = squares(10**12)  # a trillion squares, none computed yet
check(next(endless) == 0 and next(endless) == 1, "a generator computes only what is asked for")


# %% [markdown]
# A **`with` block** runs code between a set-up and a clean-up that happens even when the block
# fails: `with open(path) as f:` closes the file, `with torch.no_grad():` (03) puts gradient
# tracking back as it was. An object that defines `__enter__` and `__exit__` is such a context
# manager. Here the block fails, and the clean-up still runs (`expect_error` around it then
# shows the error):

# %%
class Announce:
    def __init__(self):
        self.log = []

    def __enter__(self):
        self.log.append("set up")
        return self

    def __exit__(self, kind, error, trace):  # the error, if the block raised one
        self.log.append("clean up")  # runs on the way out, error or not


announce = Announce()
with expect_error(ZeroDivisionError), announce:  # the same as one with inside the other
    print(1 / 0)
print(announce.log)
check(announce.log == ["set up", "clean up"], "the clean-up ran although the block failed")


# %% [markdown]
# ## Unpacking and f-string formats
#
# `*` spreads a list into positional arguments, or into a new list (`[first, *others]`, as in
# 05), and `**` a dictionary into keyword arguments; in a definition they collect them
# (`def f(*args, **kwargs)`), and on the left of `=` a starred name takes what is left
# (`first, *rest = ...`). `{**a, **b}` and `a | b` merge two dictionaries, the right one winning
# on shared keys: 10 builds each setting from a base with `{**config, **change}`.

# %%
def describe(name, size, dtype="float32"):
    return f"{name}: {size} values of {dtype}"


shape = [3, 32, 32]
settings = {"dtype": "uint8"}
print(describe(*["image", 3 * 32 * 32], **settings))
first, *rest = shape
merged = {"lr": 0.1, "epochs": 2} | {"lr": 0.01}
print(f"first = {first}, rest = {rest}, merged = {merged}")
check(merged == {"lr": 0.01, "epochs": 2}, "the right dictionary wins on a shared key")

# %% [markdown]
# An f-string puts values in text; after a colon, a **format spec** says how: `.3f` three
# decimals, `.1e` scientific notation, `.4g` four significant digits (scientific only for very
# large or small numbers; `g` alone: up to six), `3d` a whole number in 3 characters, `.1%` a
# percentage with one decimal, `+` a sign even on positive
# numbers, `,` a thousands separator, `<8` and `>8` left or right aligned in 8 characters (tables
# in 02 and 10). Before the colon, `!r` shows the value as code (a string with its quotes) and
# `!s` as plain text, which a `True` needs before it is aligned: `{True:<6}` prints `1`,
# `{True!s:<6}` prints `True` (02).

# %%
loss, accuracy, count = 0.693147, 0.9715, 10000
print(f"loss {loss:.3f} | accuracy {accuracy:.1%} | {count:,} images | {loss:.1e} | {loss:.4g}")
print(f"change {accuracy - 0.95:+.1%}")
print(f"|{'left':<8}|{'right':>8}|{'name'!r}|{True!s:<6}|")

# %% [markdown]
# ## Names, objects, `del` and changes in place
#
# A name points at an object; `b = a` makes a second name for the **same** object, not a copy.
# A change **in place** (`a.append(...)`, `a += [...]` on a list) is seen through every name;
# `a = a + [...]` makes a new object and moves only the name `a`. PyTorch's in-place methods
# end in `_` (`w.zero_()`), and 03 explains why autograd cares. `del name` removes a name; the
# object is freed when nothing refers to it any more (no name, list, attribute or closure), which
# 11 uses to free memory.

# %%
a = [1, 2]
b = a  # the same list, two names
a += [3]  # in place: b sees it
a = a[:1]  # a new list (a slice is a copy): only the name a moves to it
print(f"a = {a}, b = {b}, the same object: {a is b}")
check(b == [1, 2, 3], "the in-place change reached the second name, the new list did not")
del a  # the name is gone; the list [1, 2, 3] lives on as long as b refers to it
check("a" not in dir() and b == [1, 2, 3], "del removed the name a, not the list b names")

# %% [markdown]
# ## Type hints, paths, `zip` and one-line loops
#
# Four things the course's code uses everywhere:
#
# - **Type hints** say what a function takes and returns, `def area(shape: tuple[int, ...]) ->
#   int:`; `list[float]`, `dict[str, int]` and `X | None` are the same kind of note. Python does
#   not enforce them: they are for the reader and the editor.
# - **`pathlib.Path`** is a file path you can build with `/` (`Path("runs") / "p1"`), create
#   (`.mkdir(parents=True, exist_ok=True)`), list (`.glob("*.jpg")`) and read (`.read_text()`).
# - **`zip(a, b, strict=True)`** walks two lists side by side, in pairs; `strict=True` raises if
#   one is longer, where plain `zip` would stop silently at the shorter.
# - **A generator expression**, `sum(n * n for n in values)`, is a `for` loop inside a call that
#   makes its values one at a time; `x if condition else y` picks one of two values in a line.
#   `all(...)` of such values is `True` when every one is true, `any(...)` when at least one is;
#   `enumerate(items)` gives (position, item) pairs: `for k, item in enumerate(items)`.
#   The same loop in braces builds a dict, `{n: n * n for n in values}`, or a set,
#   `{n % 3 for n in values}` (a set keeps one of equal values).

# %%
from pathlib import Path


def area(shape: tuple[int, ...]) -> int:
    """The number of values in a tensor of this shape."""
    return shape[-1] if len(shape) == 1 else shape[0] * area(shape[1:])


folder = Path("runs") / "00_python"
folder.mkdir(parents=True, exist_ok=True)
(folder / "note.txt").write_text("hello")
names = [p.name for p in folder.glob("*.txt")]
pairs = list(zip(["a", "b"], [1, 2], strict=True))
squares = sum(n * n for n in range(4))
by_key, remainders = {n: n * n for n in range(4)}, {n % 3 for n in range(7)}
print(f"area {area((3, 32, 32))}, files {names}, pairs {pairs}, squares {squares}")
print(f"dict {by_key}, set {remainders}")
check(area((3, 32, 32)) == 3072 and squares == 14, "the hint changes nothing: area still counts")
with expect_error(ValueError):
    list(zip([1, 2, 3], [1, 2], strict=True))

# %% [markdown]
# ## Scripts: `__main__`, `argparse`, `try` and `except`
#
# 09 and 12 write Python files and run them as separate processes. 12's server file ends with
# `if __name__ == "__main__":` and the code that starts it: Python sets `__name__` to
# `"__main__"` in the file it runs, and to the module's name when the file is imported, so
# importing it (as worker processes do) does not start the server again. A script's settings come
# from the command line (`sys.argv`), read by `argparse`:

# %%
parser = argparse.ArgumentParser(description="train the CNN")
parser.add_argument("--epochs", type=int, default=2)
parser.add_argument("--lr", type=float, default=0.1)
args = parser.parse_args(["--epochs", "5"])  # a script calls parse_args() to read sys.argv
print(f"__name__ = {__name__!r}, epochs = {args.epochs}, lr = {args.lr}")
check(args.epochs == 5 and args.lr == 0.1, "given arguments are read, missing ones default")


# %% [markdown]
# `try`/`except` catches an error of a given type. Raising a new error inside `except` would
# print both, the new one "during handling of" the old; `raise NewError(...) from None` reports
# only the new, clearer one (the old stays in its `__context__`):

# %%
def parse_size(text):
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"size must be a whole number, got {text!r}") from None


print(f'parse_size("64") = {parse_size("64")}')
with expect_error(ValueError) as caught:
    parse_size("sixty-four")
check(caught.error.__suppress_context__, "from None: the int() error is not reported with it")


# %% [markdown]
# ## Exercises

# %% [markdown]
# ### Exercise 1 · Batches from a generator
#
# In every exercise of the course, replace the `...` with your code; the cell after it, a call
# of the lesson's checker (here `lesson00.exercise_1`), prints ✓ when your answer is right, or ✗
# and what is wrong.
#
# Write a generator `batches(items, size)` that yields lists of `size` consecutive items, the
# last one shorter when the items run out, and nothing for no items. It must also work on an
# endless stream, producing each batch as soon as it has its items (that is what `yield` is for).
#
# <details><summary>Hint 1</summary>
#
# Collect items in a list; when it holds `size` of them, `yield` it and start a new list.
# </details>
#
# <details><summary>Hint 2</summary>
#
# After the loop, the list may hold a few items that never reached `size`: yield them too, but
# only if there are any. Slicing `items[i : i + size]` would not work on an endless stream.
# </details>

# %%
def batches(items, size): ...  # yield lists of `size` items


# %%
lesson00.exercise_1(batches)


# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
def solution_batches(solution_items, solution_size):
    solution_batch = []
    for solution_item in solution_items:
        solution_batch.append(solution_item)
        if len(solution_batch) == solution_size:
            yield solution_batch
            solution_batch = []
    if solution_batch:
        yield solution_batch


lesson00.exercise_1(solution_batches)


# %% [markdown]
# ### Exercise 2 · A class that extends another
#
# Write a class `Clipped` that inherits from `ScaleThenShift` above and, when called, returns
# the parent's result but never less than 0. `Clipped(2, -5)(1)` is 0,
# `Clipped(2, -5)(4)` is 3. Do not repeat the multiplication or the shift: reuse the parent's.
#
# <details><summary>Hint 1</summary>
#
# `Clipped` needs no `__init__` of its own: it inherits `ScaleThenShift`'s.
# </details>
#
# <details><summary>Hint 2</summary>
#
# In `__call__`, `super().__call__(x)` is the parent's result; `max(0, ...)` clips it.
# </details>

# %%
class Clipped(ScaleThenShift): ...  # a __call__ that reuses the parent's


# %%
lesson00.exercise_2(Clipped, ScaleThenShift)


# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
class solution_Clipped(ScaleThenShift):
    def __call__(self, x):
        return max(0, super().__call__(x))


lesson00.exercise_2(solution_Clipped, ScaleThenShift)

# %% [markdown]
# ## Summary
#
# - A class stores data on `self` in `__init__`; `__call__` makes its objects callable, and a
#   child class reaches its parent's methods with `super()`, as every model in 04 does.
# - Functions are values: `lambda` writes one in place, a closure keeps its outer names, a
#   decorator (`@name`) wraps a function in another.
# - A generator yields values one at a time; a `with` block cleans up on the way out, even
#   after an error.
# - `*` and `**` spread and collect arguments, `a | b` merges dictionaries, and f-string specs
#   (`.3f`, `.1%`, `,`, `>8`) format numbers.
# - A name points at an object: changes in place are seen through every name, `del` removes a
#   name; a script guards its start with `__main__`, reads `argparse` options and turns errors
#   into clear messages with `raise ... from None`.
#
# Next: [01 · Tensors](01_tensors.ipynb).
