import pytest

from companion.budget import BUDGET_ENV, budget, budget_mode


def test_full_is_the_default(monkeypatch):
    monkeypatch.delenv(BUDGET_ENV, raising=False)
    assert budget_mode() == "full"
    assert budget(full=100_000, tiny=10) == 100_000


def test_tiny_mode_picks_the_tiny_value(monkeypatch):
    monkeypatch.setenv(BUDGET_ENV, "tiny")
    assert budget(full=100_000, tiny=10) == 10
    assert budget(full=(1, 2, 3), tiny=(1,)) == (1,)


def test_mode_is_case_and_space_insensitive(monkeypatch):
    monkeypatch.setenv(BUDGET_ENV, " TINY ")
    assert budget_mode() == "tiny"


def test_unknown_mode_is_an_error_naming_the_variable(monkeypatch):
    monkeypatch.setenv(BUDGET_ENV, "small")
    with pytest.raises(ValueError, match=f"{BUDGET_ENV}='small'"):
        budget(full=1, tiny=0)


def test_mismatched_types_are_an_error():
    with pytest.raises(TypeError, match="same type"):
        budget(full=1000, tiny="10")
