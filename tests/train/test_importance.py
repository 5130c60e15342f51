"""The importance correction's arithmetic, checked against values computed by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from strategic_arena.train.config import load_config
from strategic_arena.train.policy.importance import correct, importance_weights


def test_truncation_and_masking_by_hand() -> None:
    ratios = np.array([0.25, 0.5, 1.0, 1.5, 3.0, 10.0])
    result = importance_weights(np.log(ratios), cap=2.0)
    np.testing.assert_allclose(result.weights, [0.25, 0.5, 1.0, 1.5, 2.0, 2.0])
    assert result.truncated.tolist() == [False, False, False, False, True, True]
    assert not result.masked.any()
    banded = importance_weights(np.log(ratios), cap=2.0, mask_low=0.4, mask_high=5.0)
    np.testing.assert_allclose(banded.weights, [0.0, 0.5, 1.0, 1.5, 2.0, 0.0])
    assert banded.masked.tolist() == [True, False, False, False, False, True]
    assert banded.truncated.tolist() == [False, False, False, False, True, False]
    uncapped = importance_weights(np.log(ratios), cap=None)
    np.testing.assert_allclose(uncapped.weights, ratios)


def test_per_turn_weights_and_metrics() -> None:
    learner = [[math.log(0.5), math.log(0.2)], [math.log(0.9)]]
    behaviour = [[math.log(0.25), math.log(0.4)], [math.log(0.3)]]  # ratios 2, 0.5, 3
    result = correct(learner, behaviour, cap=2.5, mask_low=0.6)
    assert len(result.weights) == 2
    np.testing.assert_allclose(result.weights[0], [2.0, 0.0])
    np.testing.assert_allclose(result.weights[1], [2.5])
    assert result.metrics["train/is_ratio_mean"] == pytest.approx((2 + 0.5 + 3) / 3)
    assert result.metrics["train/is_ratio_max"] == pytest.approx(3.0)
    assert result.metrics["train/is_truncated_frac"] == pytest.approx(1 / 3)
    assert result.metrics["train/is_masked_frac"] == pytest.approx(1 / 3)
    empty = correct([], [], cap=2.0)
    assert empty.weights == [] and empty.metrics["train/is_ratio_mean"] == 1.0
    with pytest.raises(ValueError, match="shape"):
        correct([[0.0]], [[0.0, 0.0]], cap=2.0)


def test_sequence_level_weights_whole_responses() -> None:
    learner = [[math.log(0.5), math.log(0.2)], [math.log(0.9)], [math.log(0.1)]]
    behaviour = [[math.log(0.25), math.log(0.4)], [math.log(0.3)], [math.log(0.2)]]
    # response ratios: 2 * 0.5 = 1, 3, 0.5
    result = correct(learner, behaviour, cap=2.5, mask_low=0.6, level="sequence")
    np.testing.assert_allclose(result.weights[0], [1.0, 1.0])
    np.testing.assert_allclose(result.weights[1], [2.5])
    np.testing.assert_allclose(result.weights[2], [0.0])
    assert result.metrics["train/is_ratio_mean"] == pytest.approx((1 + 3 + 0.5) / 3)
    assert result.metrics["train/is_truncated_frac"] == pytest.approx(1 / 3)
    assert result.metrics["train/is_masked_frac"] == pytest.approx(1 / 3)
    with pytest.raises(ValueError, match="level"):
        correct(learner, behaviour, cap=2.0, level="turn")


def test_the_correction_is_on_with_vllm_by_default() -> None:
    assert load_config(None, ["rollout.engine=vllm"]).corrects_behaviour
    assert not load_config(None, []).corrects_behaviour
    assert not load_config(
        None, ["rollout.engine=vllm", "ppo.old_logprobs=engine"]
    ).corrects_behaviour
    assert load_config(None, ["correction.mode=always"]).corrects_behaviour
    with pytest.raises(ValueError, match=r"correction\.mode: always needs"):
        load_config(None, ["correction.mode=always", "ppo.old_logprobs=engine"])
    with pytest.raises(ValueError, match="is_mask_low must be below"):
        load_config(None, ["correction.is_mask_low=2", "correction.is_mask_high=1"])
    with pytest.raises(ValueError, match="tis_cap"):
        load_config(None, ["correction.tis_cap=0"])
