"""``EmulatorOptions``: the defaults' one home, where a data directory keeps its files, and how
the emulator is composed from options and keywords."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from scheduler_emulator import Emulator, ManualClock
from scheduler_emulator.runtime._options import (
    DEFAULT_LOCATION,
    DEFAULT_PROJECT,
    KEY_FILE_NAME,
    STORE_FILE_NAME,
    EmulatorOptions,
)
from scheduler_emulator.runtime.storage.store import DEFAULT_RETAIN_ATTEMPTS
from scheduler_emulator.wire import GOOGLE_ISSUER


def test_the_defaults() -> None:
    options = EmulatorOptions()
    assert (options.project, options.location) == ("my-project", "us-central1")
    assert (DEFAULT_PROJECT, DEFAULT_LOCATION, STORE_FILE_NAME) == (
        "my-project",
        "us-central1",
        "emulator.db",
    )
    assert options.dst_policy == "absolute"
    assert options.force_run_schedule_time == "next"
    assert options.retain_attempts == DEFAULT_RETAIN_ATTEMPTS
    assert (options.token_issuer, options.token_time) == (GOOGLE_ISSUER, "emulator")
    assert options.data_dir is None and options.app_engine_urls is None


@pytest.mark.parametrize(
    ("location", "locations", "shown"),
    [
        ("us-central1", (), ("us-central1",)),
        ("europe-west1", (), ("europe-west1",)),
        ("us-central1", ("us-central1", "asia-east1"), ("us-central1", "asia-east1")),
    ],
)
def test_list_locations_shows_the_given_locations_or_else_the_default_one(
    location: str, locations: tuple[str, ...], shown: tuple[str, ...]
) -> None:
    assert EmulatorOptions(location=location, locations=locations).all_locations == shown


def test_in_memory_there_is_no_key_file_and_the_store_is_a_memory_database() -> None:
    options = EmulatorOptions()
    assert options.key_path is None
    assert options.store_path() == ":memory:"


def test_a_data_directory_holds_the_database_and_the_signing_key(tmp_path: Path) -> None:
    options = EmulatorOptions(data_dir=tmp_path / "data")
    assert options.store_path() == tmp_path / "data" / "emulator.db"
    assert options.key_path == tmp_path / "data" / KEY_FILE_NAME


def test_a_data_directory_given_as_text_is_a_path(tmp_path: Path) -> None:
    with Emulator(ManualClock(), data_dir=str(tmp_path / "data")) as emulator:
        assert emulator.options.data_dir == tmp_path / "data"
        assert (tmp_path / "data" / "emulator.db").is_file()


def test_the_store_creates_the_directory_and_keeps_the_retention(tmp_path: Path) -> None:
    options = EmulatorOptions(
        data_dir=tmp_path / "new" / "data", retain_attempts=7, retain_megabytes=3
    )
    with Emulator(ManualClock(), options=options) as emulator:
        assert (tmp_path / "new" / "data" / "emulator.db").is_file()
        assert (emulator.store.retain_attempts, emulator.store.retain_megabytes) == (7, 3)


def test_options_are_frozen_and_hashable_even_with_a_mapping_of_app_engine_urls() -> None:
    options = EmulatorOptions(app_engine_urls={"*": "http://127.0.0.1:8081"})
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.project = "other"  # type: ignore[misc]
    assert hash(options) == hash(EmulatorOptions())  # the URLs take no part in equality
    assert options == EmulatorOptions(app_engine_urls="http://elsewhere")


def test_the_emulator_takes_its_settings_from_options_and_keywords_win() -> None:
    clock = ManualClock()
    emulator = Emulator(clock, options=EmulatorOptions(project="shop-app", location="europe-west1"))
    try:
        assert (emulator.project, emulator.location) == ("shop-app", "europe-west1")
        assert emulator.options.all_locations == ("europe-west1",)
    finally:
        emulator.close()
    emulator = Emulator(clock, options=EmulatorOptions(project="shop-app"), project="other-project")
    try:
        assert emulator.project == "other-project" == emulator.options.project
    finally:
        emulator.close()


def test_a_keyword_that_is_no_option_is_named_with_the_nearest_or_every_option() -> None:
    """A trial's ``Emulator(in_memory=True)`` raised dataclasses' ``EmulatorOptions.__init__()
    got an unexpected keyword argument``, naming a class it had not called."""
    with pytest.raises(TypeError, match="^Emulator\\(\\) takes no option 'projct'; did you mean"):
        Emulator(projct="shop")
    with pytest.raises(TypeError, match="no option 'in_memory'; the options: app_engine_urls, "):
        Emulator(in_memory=True)
