"""helpers.check: timing claims that report on a learner's machine and fail under the tests;
intended errors and warnings that print one line and fail when they do not happen."""

from __future__ import annotations

import warnings

import pytest

from helpers.check import (
    CLAIMS_LOG_ENV,
    ERROR_LINE_RE,
    STRICT_ENV,
    ClaimFailed,
    ErrorNotRaised,
    WarningNotRaised,
    check,
    error_line,
    expect_error,
    expect_warning,
)


@pytest.fixture(autouse=True)
def no_claims_log(monkeypatch):
    """These claims are the tests' own, not the notebooks': keep them out of the run's table."""
    monkeypatch.delenv(CLAIMS_LOG_ENV, raising=False)


def test_a_timing_claim_that_misses_reports_and_goes_on_for_a_learner(monkeypatch, capsys):
    monkeypatch.delenv(STRICT_ENV, raising=False)
    check(1.1 >= 1.3, "at least 1.3× faster", measured="1.10×", timing=True)
    out = capsys.readouterr().out
    assert out.startswith("✗ at least 1.3× faster (measured 1.10×)\n")
    assert "timings depend on the hardware" in out and "goes on" in out


def test_a_timing_claim_that_misses_fails_under_the_tests(monkeypatch):
    monkeypatch.setenv(STRICT_ENV, "1")
    with pytest.raises(ClaimFailed, match=r"✗ at least 1\.3× faster \(measured 1\.10×\)"):
        check(False, "at least 1.3× faster", measured="1.10×", timing=True)


def test_a_correctness_claim_fails_everywhere(monkeypatch):
    monkeypatch.delenv(STRICT_ENV, raising=False)
    with pytest.raises(ClaimFailed):
        check(False, "the two results are equal", measured="3.0e-01")


def test_a_timing_claim_that_holds_prints_one_line(monkeypatch, capsys):
    monkeypatch.delenv(STRICT_ENV, raising=False)
    assert check(True, "faster", measured="2×", timing=True) is None  # nothing to display
    assert capsys.readouterr().out == "✓ faster\n"


def test_expect_error_prints_the_error_in_one_line_and_goes_on(capsys):
    with expect_error(ZeroDivisionError) as caught:
        1 / 0  # noqa: B018
    assert isinstance(caught.error, ZeroDivisionError)
    out = capsys.readouterr().out
    assert out == "⛔ ZeroDivisionError: division by zero\n"
    assert ERROR_LINE_RE.match(out.strip()).group("ename") == "ZeroDivisionError"


def test_expect_error_fails_when_nothing_is_raised():
    with (
        pytest.raises(ErrorNotRaised, match="expected ValueError, but the code ran"),
        expect_error(ValueError),
    ):
        pass


def test_expect_error_lets_another_error_through():
    with pytest.raises(KeyError), expect_error(ValueError):
        raise KeyError("not the lesson")


def test_expect_error_checks_the_message_when_asked(capsys):
    with expect_error((TypeError, ValueError), match="negative"):
        raise ValueError("strides are negative")
    assert capsys.readouterr().out.startswith("⛔ ValueError: strides are negative")
    with (
        pytest.raises(ErrorNotRaised, match="matching 'negative'"),
        expect_error(ValueError, match="negative"),
    ):
        raise ValueError("something else")


def test_error_line_keeps_two_lines_and_drops_colour_codes():
    error = RuntimeError("Error(s) in loading:\n\tMissing key(s): a\n\tUnexpected key(s): b")
    assert error_line(error) == "⛔ RuntimeError: Error(s) in loading:\n   Missing key(s): a …"
    assert error_line(ValueError("\x1b[1mbold\x1b[0m text")) == "⛔ ValueError: bold text"
    assert error_line(KeyError("weight")) == "⛔ KeyError: 'weight'"


def test_expect_error_shows_more_lines_when_asked(capsys):
    with expect_error(RuntimeError, lines=3):
        raise RuntimeError("Error(s):\n\tMissing: a\n\tUnexpected: module.a\n\tmore")
    assert capsys.readouterr().out.splitlines() == [
        "⛔ RuntimeError: Error(s):",
        "   Missing: a",
        "   Unexpected: module.a …",
    ]


def test_expect_error_never_swallows_a_failed_check():
    with pytest.raises(ClaimFailed), expect_error(AssertionError):
        check(False, "a correctness claim inside the block")
    with pytest.raises(ErrorNotRaised), expect_error(Exception), expect_error(ValueError):
        pass


def test_expect_warning_prints_each_warning_once_without_torch_s_source_location(capsys):
    with expect_warning(UserWarning, match="shapes") as caught:
        warnings.warn("mind the shapes. (Triggered internally at /__w/a/b.h:488.)", stacklevel=1)
        warnings.warn("mind the shapes. (Triggered internally at /__w/a/b.h:488.)", stacklevel=1)
    assert capsys.readouterr().out == "⚠ UserWarning: mind the shapes.\n"
    assert len(caught) == 2


def test_expect_warning_fails_without_the_warning_and_shows_the_others():
    with pytest.raises(WarningNotRaised, match="expected FutureWarning"):  # noqa: SIM117
        with pytest.warns(DeprecationWarning):  # shown as usual, not swallowed
            with expect_warning(FutureWarning):
                warnings.warn("old", DeprecationWarning, stacklevel=1)
    with pytest.warns(UserWarning, match="something else"):  # noqa: SIM117 (given back)
        with pytest.raises(WarningNotRaised, match="matching 'size'"), expect_warning(match="size"):
            warnings.warn("something else", stacklevel=1)


def test_expect_warning_gives_back_what_it_does_not_show_under_the_outer_filters(capsys):
    with pytest.warns(UserWarning, match="unrelated"):  # noqa: SIM117
        with expect_warning(UserWarning, match="shapes"):
            warnings.warn("mind the shapes", stacklevel=1)
            warnings.warn("an unrelated one", stacklevel=1)
    assert capsys.readouterr().out == "⚠ UserWarning: mind the shapes\n"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with warnings.catch_warnings(record=True) as outside:
            warnings.simplefilter("ignore", DeprecationWarning)
            with expect_warning(UserWarning):
                warnings.warn("shown", stacklevel=1)
                warnings.warn("ignored outside", DeprecationWarning, stacklevel=1)
    assert outside == []
    with pytest.warns(UserWarning, match="before the error"), pytest.raises(ZeroDivisionError):  # noqa: SIM117
        with expect_warning(FutureWarning):
            warnings.warn("before the error", stacklevel=1)
            raise ZeroDivisionError
