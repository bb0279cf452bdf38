"""Property tests of the UTF-8 kernels on every backend (hypothesis)."""
from __future__ import annotations

import numpy as np

from gpu_text import utf8
from tests.conftest import require
from tests.test_utf8_kernels import assert_same_as_reference, host
from tests.utf8_inputs import batch_of

hypothesis = require("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.binary(max_size=40), max_size=8))
def test_decode_properties(backend, strings):
    batch = batch_of(strings)
    decoded = utf8.decode(batch, backend)
    rows = decoded.byte_offsets.to_pylist()
    for raw, positions in zip(strings, rows):
        # offsets start at 0, strictly increase, and every character spans 1-4 bytes: every byte covered
        spans = np.diff(positions + [len(raw)])
        assert (not raw and not positions) or (positions[0] == 0 and (spans >= 1).all() and (spans <= 4).all())
    assert_same_as_reference(batch, backend)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.text(), max_size=8))
def test_encode_decode_round_trip_of_valid_text(backend, texts):
    valid = [t.encode("utf-8") for t in texts]  # st.text() never yields lone surrogates
    batch = batch_of(valid)
    assert host(utf8.validate(batch, backend)).all()
    assert utf8.encode(utf8.decode(batch, backend).codepoints, backend).to_bytes_list() == valid
