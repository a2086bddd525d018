"""The one spelling of each kind of number (text.py): expected strings written out."""

from __future__ import annotations

import math

import pytest

from pytest_graphnetz.base.text import (
    exception_line,
    fmt_fixed,
    fmt_interval,
    fmt_level,
    fmt_num,
    fmt_p,
    fmt_signed,
    listed,
)


@pytest.mark.parametrize(("p", "text"), [
    (1.0, "1.000"), (0.5, "0.500"), (0.0123, "0.012"), (0.01, "0.010"), (0.0099, "0.0099"),
    (0.00109, "0.0011"), (7.6e-07, "7.6e-07"), (0.0, "0"), (None, "n/a"), (math.nan, "n/a"),
])
def test_p_values_have_one_spelling(p, text) -> None:
    assert fmt_p(p) == text


@pytest.mark.parametrize(("x", "text"), [
    (0.9375, "0.9375"), (0.029213, "0.02921"), (1.23456e-05, "1.235e-05"), (0.0, "0"),
    (12345.0, "1.234e+04"), (None, "n/a"), (math.nan, "n/a"), (math.inf, "inf"),
])
def test_numbers_keep_four_significant_digits(x, text) -> None:
    assert fmt_num(x) == text


@pytest.mark.parametrize(("x", "text"), [
    (0.0123, "+0.0123"), (-0.5, "-0.5"), (0.0, "+0"), (-0.0, "+0"), (math.nan, "n/a"),
])
def test_signed_numbers_never_print_minus_zero(x, text) -> None:
    assert fmt_signed(x) == text


@pytest.mark.parametrize(("x", "digits", "signed", "text"), [
    (0.81, 3, False, "0.810"), (0.9375, 4, False, "0.9375"), (-0.0001, 3, False, "0.000"),
    (-0.0001, 3, True, "+0.000"), (0.025, 3, True, "+0.025"), (-0.018, 3, True, "-0.018"),
    (math.nan, 4, False, "nan"), (math.inf, 4, False, "inf"),
])
def test_fixed_decimals_for_table_columns(x, digits, signed, text) -> None:
    assert fmt_fixed(x, digits, signed=signed) == text


@pytest.mark.parametrize(("level", "text"), [
    (0.95, "95%"), (0.9, "90%"), (1 - 2 * 0.05, "90%"), (0.925, "92.5%"), (0.8, "80%"),
])
def test_confidence_levels_as_percent(level, text) -> None:
    assert fmt_level(level) == text


def test_intervals_print_both_ends_as_numbers() -> None:
    assert fmt_interval(0.89041, 0.98459) == "[0.8904, 0.9846]"
    assert fmt_interval(math.nan, math.nan) == "[n/a, n/a]"


def test_an_exception_is_one_clipped_line_or_its_type() -> None:
    assert exception_line(ValueError("bad\n  value\tthere")) == "bad value there"
    assert exception_line(OSError("x" * 50), 10) == "x" * 10
    assert exception_line(KeyboardInterrupt()) == "KeyboardInterrupt"


def test_a_long_list_is_cut_and_counted() -> None:
    assert listed(["a", "b"], 2) == "a, b"
    assert listed(["a", "b", "c"], 2) == "a, b and 1 more"
    assert listed(["a", "b", "c"], 1, "; ") == "a and 2 more"
