"""The two settings objects: how a model is asked and how it samples (strategic_arena.asking)."""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

import pytest

from strategic_arena.asking import (
    SETTINGS_FILE,
    Asking,
    Evaluation,
    Sampling,
    Serving,
    read_settings,
    settings_from_dict,
    settings_to_dict,
    write_settings,
)
from strategic_arena.field_docs import field_docs
from strategic_arena.settings_options import (
    ASKING_FLAGS,
    SAMPLING_FLAGS,
    add_settings_options,
    settings_from_args,
)

ASKED = Asking(
    style="boxed",
    strict=False,
    require_reasoning=True,
    include_history=True,
    thinking_in_history="strip",
    shuffle_actions=True,
    policy="retry:2",
    response_prefix="\\boxed{",
    chat_template_kwargs={"enable_thinking": False},
    extra_body={"include_stop_str_in_output": True},
)
SAMPLED = Sampling(
    temperature=0.6, top_p=0.95, top_k=20, min_p=0.05, max_tokens=64, stop=("}",), seed=3
)


@pytest.mark.parametrize("settings", [ASKED, SAMPLED, Asking(), Sampling()])
def test_settings_go_through_json_and_back_unchanged(settings: Asking | Sampling) -> None:
    data = json.loads(json.dumps(settings_to_dict(settings)))
    assert settings_from_dict(type(settings), data) == settings


@pytest.mark.parametrize("cls", [Asking, Sampling, Serving, Evaluation])
def test_every_field_is_documented_once_under_it(cls: type) -> None:
    docs = field_docs(cls)
    assert set(docs) == {item.name for item in dataclasses.fields(cls)}
    assert all(len(text) > 20 for text in docs.values())


@pytest.mark.parametrize(
    ("cls", "data", "message"),
    [
        (Asking, {"styl": "boxed"}, "unknown Asking key 'styl' (did you mean 'style'?)"),
        (Asking, {"style": "boxd"}, "style must be one of marshal, boxed"),
        (Asking, {"strict": "yes"}, "strict must be true or false; got 'yes'"),
        (Asking, {"policy": "retry"}, "unknown illegal-move policy 'retry'"),
        (Asking, {"thinking_in_history": "drop"}, "thinking_in_history must be one of"),
        (Asking, {"extra_body": [1]}, "extra_body must be a mapping"),
        (Sampling, {"temperature": -1}, "temperature must lie in [0, 100]; got -1"),
        (Sampling, {"top_p": 0}, "top_p must lie in (0, 1]"),
        (Sampling, {"max_tokens": 0}, "max_tokens must lie in [1, "),
        (Sampling, {"max_tokens": 1.5}, "max_tokens must be an integer or null"),
        (Sampling, {"stop": [""]}, "stop must be a list of non-empty strings"),
    ],
)
def test_a_bad_value_is_refused_in_one_line_naming_it(
    cls: type[Asking] | type[Sampling], data: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError) as refused:
        settings_from_dict(cls, data, "run.json")
    text = str(refused.value)
    assert text.startswith("run.json: ") and message in text and "\n" not in text


def test_pydantic_validates_the_same_dataclasses() -> None:
    pydantic = pytest.importorskip("pydantic")
    adapter = pydantic.TypeAdapter(Asking)
    assert adapter.validate_python(settings_to_dict(ASKED)) == ASKED
    with pytest.raises(pydantic.ValidationError, match="style must be one of"):
        adapter.validate_python({"style": "boxd"})
    assert pydantic.TypeAdapter(Sampling).validate_python({"stop": ["x"]}).stop == ("x",)


def test_request_fields_put_the_extra_body_last_so_it_wins() -> None:
    assert SAMPLED.request_fields() == {
        "temperature": 0.6,
        "top_p": 0.95,
        "max_tokens": 64,
        "seed": 3,
        "stop": ["}"],
    }
    assert SAMPLED.extra_fields() == {"top_k": 20, "min_p": 0.05}
    assert Sampling().request_fields() == {} and Sampling().extra_fields() == {}
    asked = Asking(chat_template_kwargs={"a": 1}, extra_body={"chat_template_kwargs": {"b": 2}})
    assert asked.request_fields() == {"chat_template_kwargs": {"b": 2}}


def test_a_settings_file_is_found_from_the_checkpoint_or_its_model_folder(tmp_path: Path) -> None:
    checkpoint = tmp_path / "step-000010"
    (checkpoint / "policy").mkdir(parents=True)
    written = write_settings(checkpoint, ASKED, SAMPLED, {"generation_config": "vllm"})
    assert written == checkpoint / SETTINGS_FILE
    for where in (checkpoint, checkpoint / "policy", written):
        assert read_settings(where) == (ASKED, SAMPLED)
    with pytest.raises(ValueError, match="no model settings at"):
        read_settings(tmp_path)
    (tmp_path / "other.json").write_text('{"asking": {}}')
    with pytest.raises(ValueError, match="not a model settings file"):
        read_settings(tmp_path / "other.json")


def test_options_given_override_single_fields_of_a_base() -> None:
    parser = argparse.ArgumentParser()
    add_settings_options(parser.add_argument_group("s"), Sampling, SAMPLING_FLAGS)
    add_settings_options(parser.add_argument_group("a"), Asking, ASKING_FLAGS)
    args = parser.parse_args(["--temperature", "0", "--lenient", "--stop", "a", "--stop", "b"])
    assert settings_from_args(args, SAMPLED) == dataclasses.replace(
        SAMPLED, temperature=0.0, stop=("a", "b")
    )
    assert settings_from_args(args, Asking(style="json")) == Asking(style="json", strict=False)
    untouched = parser.parse_args([])
    assert settings_from_args(untouched, ASKED) == ASKED
    again = parser.parse_args(["--history", "--no-shuffle-actions", "--sampling-seed", "7"])
    assert settings_from_args(again, Asking()) == Asking(include_history=True)
    assert settings_from_args(again, Sampling()).seed == 7
