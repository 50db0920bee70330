"""Tables of bad calls, (call, exception type, text), shared by the op tests: each call raises a readable
error naming the problem, and -- where the check needs no values on the device -- FakeTensor raises the
same first line (the C++ Meta kernels run the bindings' problem functions)."""

from __future__ import annotations

import pytest


def assert_readable(entry) -> None:
    call, kind, text = entry
    with pytest.raises(kind) as info:
        call()
    assert text in str(info.value)


def assert_fake_raises_the_same(entry) -> None:
    from torch._subclasses.fake_tensor import FakeTensorMode

    call, kind, text = entry
    with pytest.raises(kind) as real:
        call()
    with FakeTensorMode(), pytest.raises(kind) as fake:
        call()
    assert str(real.value).splitlines()[0] == str(fake.value).splitlines()[0]
    assert text in str(fake.value)


def fake_checkable(bad: list, data_dependent: tuple[str, ...]) -> list[int]:
    """Indices of `bad` whose text names no value on the device (no fake sees those)."""
    return [i for i, (_, _, text) in enumerate(bad) if not any(d in text for d in data_dependent)]


def bad_input_tests(bad: list, data_dependent: tuple[str, ...], prefix: str = ""):
    """A table's two tests, for the test module to bind at its top level under these names: every call raises a
    readable error (its text after `prefix`, the op's name where the table leaves it out), and the fake raises the
    same where the check reads no value on the device (data_dependent: fake_checkable)."""

    @pytest.mark.parametrize("i", range(len(bad)))
    def test_bad_input_is_a_readable_error(i):
        call, kind, text = bad[i]
        assert_readable((call, kind, prefix + text))

    @pytest.mark.parametrize("i", fake_checkable(bad, data_dependent))
    def test_fake_and_real_calls_raise_one_message(i):
        assert_fake_raises_the_same(bad[i])

    return test_bad_input_is_a_readable_error, test_fake_and_real_calls_raise_one_message
