"""Config precedence, provider enablement, credentials and clear errors for bad files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agi_jupyter.config import SERVER_KEYS, find_project, load_config, setting_field, webhook_secret
from agi_jupyter.errors import ConfigError, UsageError
from agi_jupyter.model_specs import parse_model_spec


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "proj"
    folder.mkdir()
    return folder


def env_for(home: Path, **extra: str) -> dict[str, str]:
    return {"HOME": str(home), **extra}


def write_json(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def test_defaults_fall_back_to_offline_fake_model(project: Path, home: Path) -> None:
    cfg = load_config(project, env=env_for(home))
    assert cfg.default_model == "fake:echo"
    assert cfg.default_model_is_fallback
    assert cfg.default_agent == "general"
    assert cfg.max_iterations == 10
    assert cfg.artifact_threshold == 64 * 1024
    assert cfg.resolve_model() == ("fake", "echo")
    assert cfg.sources == ()


def test_a_key_in_the_environment_picks_that_provider(project: Path, home: Path) -> None:
    cfg = load_config(project, env=env_for(home, ANTHROPIC_API_KEY="sk-ant-test-123456"))
    assert cfg.default_model == "anthropic:claude-sonnet-4-6"
    assert cfg.providers["anthropic"].configured
    assert not cfg.providers["openai"].configured


def test_precedence_explicit_over_project_over_global_over_traitlets_over_env(
    project: Path, home: Path
) -> None:
    env = env_for(home, AGI_MODEL="openai:from-env", AGI_AGENT="plan", AGI_MAX_ITERATIONS="3")
    traitlets = {"default_model": "openai:from-traitlets", "max_iterations": 4}
    write_json(home / ".config/agi/config.json", {"default_model": "openai:from-global"})
    cfg = load_config(project, env=env, traitlets=traitlets)
    assert cfg.default_model == "openai:from-global"
    assert cfg.max_iterations == 4  # traitlets beat env
    assert cfg.default_agent == "plan"  # only env sets it

    write_json(project / ".agi/config.json", {"default_model": "anthropic:from-project"})
    cfg = load_config(project, env=env, traitlets=traitlets)
    assert cfg.default_model == "anthropic:from-project"

    cfg = load_config(project, env=env, traitlets=traitlets, overrides={"default_model": "fake:x"})
    assert cfg.default_model == "fake:x"
    assert cfg.sources[0] == "environment"
    assert cfg.sources[-1] == "explicit arguments"


def test_provider_settings_merge_per_provider(project: Path, home: Path) -> None:
    write_json(
        home / ".config/agi/config.json", {"providers": {"ollama": {"base_url": "http://h:1/v1"}}}
    )
    write_json(project / ".agi/config.json", {"providers": {"ollama": {"enabled": False}}})
    cfg = load_config(project, env=env_for(home))
    ollama = cfg.providers["ollama"]
    assert ollama.base_url == "http://h:1/v1"
    assert not ollama.enabled
    assert not ollama.configured


def test_base_url_from_the_sdk_environment_variables(project: Path, home: Path) -> None:
    cfg = load_config(project, env=env_for(home, OPENAI_BASE_URL="http://127.0.0.1:9/v1"))
    assert cfg.providers["openai"].base_url == "http://127.0.0.1:9/v1"
    assert cfg.providers["google"].base_url is not None
    assert "generativelanguage" in cfg.providers["google"].base_url


def test_credentials_file_wins_over_environment_and_never_prints(project: Path, home: Path) -> None:
    write_json(home / ".config/agi/credentials.json", {"openai": "sk-from-file-abcdef"})
    cfg = load_config(project, env=env_for(home, OPENAI_API_KEY="sk-from-env-abcdef"))
    settings = cfg.providers["openai"]
    assert settings.api_key == "sk-from-file-abcdef"
    assert "sk-from" not in repr(settings)
    assert "sk-from" not in repr(cfg)


def test_malformed_json_names_the_file_and_position(project: Path, home: Path) -> None:
    path = project / ".agi/config.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"default_model": "x",,}')
    with pytest.raises(ConfigError) as info:
        load_config(project, env=env_for(home))
    assert str(path) in info.value.message
    assert "line 1" in info.value.message


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        ({"max_iterations": "many"}, "max_iterations"),
        ({"max_iterations": 0}, "max_iterations"),
        ({"defualt_model": "x"}, "defualt_model"),
        ({"providers": {"nope": {}}}, "unknown provider 'nope'"),
        ({"providers": {"openai": {"api_key": "sk-x"}}}, "api_key is not allowed"),
        ([1, 2], "must hold a JSON object"),
    ],
)
def test_invalid_config_values_are_clear_errors(
    project: Path, home: Path, data: object, needle: str
) -> None:
    write_json(project / ".agi/config.json", data)
    with pytest.raises(ConfigError) as info:
        load_config(project, env=env_for(home))
    assert needle in info.value.message
    assert ".agi/config.json" in info.value.message
    assert "sk-x" not in info.value.message


def test_invalid_environment_value_names_the_environment(project: Path, home: Path) -> None:
    with pytest.raises(ConfigError, match="environment: max_iterations"):
        load_config(project, env=env_for(home, AGI_MAX_ITERATIONS="lots"))


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("openai:gpt-5-mini", ("openai", "gpt-5-mini")),
        ("ollama:llama3:8b", ("ollama", "llama3:8b")),
        ("claude-sonnet-4-6", ("anthropic", "claude-sonnet-4-6")),
        ("gpt-4o", ("openai", "gpt-4o")),
        ("o4-mini", ("openai", "o4-mini")),
        ("gemini-2.5-pro", ("google", "gemini-2.5-pro")),
        ("fake", ("fake", "echo")),
        ("anthropic:", ("anthropic", "claude-sonnet-4-6")),
    ],
)
def test_parse_model_spec(spec: str, expected: tuple[str, str]) -> None:
    assert parse_model_spec(spec) == expected


def test_unplaceable_model_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="provider:model"):
        parse_model_spec("mystery-model")


def test_find_project_walks_up_to_an_existing_agi_folder(tmp_path: Path) -> None:
    (tmp_path / ".agi").mkdir()
    nested = tmp_path / "a" / "b"
    nested.mkdir(parents=True)
    assert find_project(nested) == tmp_path.resolve()
    lone = tmp_path.parent / f"{tmp_path.name}-other"
    lone.mkdir()
    assert find_project(lone) == lone.resolve()


def test_unplaceable_default_model_in_a_file_names_the_file(project: Path, home: Path) -> None:
    write_json(project / ".agi/config.json", {"default_model": "mystery-model"})
    with pytest.raises(ConfigError, match=r"config\.json: default_model: cannot tell"):
        load_config(project, env=env_for(home))


# --- the store's database ------------------------------------------------------------------

URL = "postgresql://agi@db.example:5432/team"


def test_no_database_url_means_the_sqlite_store(project: Path, home: Path) -> None:
    cfg = load_config(project, env=env_for(home))
    assert (cfg.database_url, cfg.database_password, cfg.project_key) == (None, None, None)
    assert cfg.project_namespace is None
    assert cfg.store_key == str(project.resolve())


def test_database_url_and_project_namespace_from_each_layer(project: Path, home: Path) -> None:
    env = env_for(home, AGI_DATABASE_URL=URL, AGI_PROJECT_NAMESPACE="user-alice")
    cfg = load_config(project, env=env)
    assert (cfg.database_url, cfg.store_key) == (URL, f"user-alice:{project.resolve()}")
    traitlets = load_config(project, env=env_for(home), traitlets={"database_url": URL + "2"})
    assert traitlets.database_url == URL + "2"
    write_json(project / ".agi" / "config.json", {"database_url": URL + "3", "project_key": "p"})
    cfg = load_config(project, env=env)
    assert (cfg.database_url, cfg.project_key, cfg.store_key) == (URL + "3", "p", "p")


def test_project_key_belongs_to_the_project_file(project: Path, home: Path) -> None:
    with pytest.raises(ConfigError, match="project_key names one project"):
        load_config(project, env=env_for(home), traitlets={"project_key": "k"})
    write_json(home / ".config" / "agi" / "config.json", {"project_key": "k"})
    with pytest.raises(ConfigError, match=r"config\.json: project_key"):
        load_config(project, env=env_for(home))
    (home / ".config" / "agi" / "config.json").unlink()
    assert load_config(project, env=env_for(home), overrides={"project_key": "k"}).store_key == "k"


def test_a_password_in_a_config_file_is_refused(project: Path, home: Path) -> None:
    for path in (project / ".agi" / "config.json", home / ".config" / "agi" / "config.json"):
        for url in ("postgresql://agi:hunter2@db/team", "postgresql://agi@db/team?password=x"):
            write_json(path, {"database_url": url})
            with pytest.raises(ConfigError, match="must not contain a password") as info:
                load_config(project, env=env_for(home))
            assert "hunter2" not in info.value.message
            assert str(path) in info.value.message
        path.unlink()
    env = env_for(home, AGI_DATABASE_URL="postgresql://agi:hunter2@db/team")
    cfg = load_config(project, env=env)  # the environment may carry one
    assert cfg.database_url is not None
    assert "hunter2" not in repr(cfg)


def test_the_database_password_comes_from_the_credentials_file(project: Path, home: Path) -> None:
    write_json(home / ".config" / "agi" / "credentials.json", {"database_password": "pw-123456"})
    without = load_config(project, env=env_for(home))
    assert without.database_password is None  # not read when no database is configured
    cfg = load_config(project, env=env_for(home, AGI_DATABASE_URL=URL))
    assert cfg.database_password == "pw-123456"
    assert "pw-123456" not in repr(cfg)


def test_a_database_url_must_be_postgresql(project: Path, home: Path) -> None:
    with pytest.raises(ConfigError, match="database_url"):
        load_config(project, env=env_for(home, AGI_DATABASE_URL="sqlite:///x.db"))


def test_durability_settings_and_their_defaults(project: Path, home: Path) -> None:
    cfg = load_config(project, env=env_for(home))
    assert (cfg.stale_after, cfg.persist_deltas) == (30.0, True)
    cfg = load_config(project, env=env_for(home, AGI_STALE_AFTER="4", AGI_PERSIST_DELTAS="0"))
    assert (cfg.stale_after, cfg.persist_deltas) == (4.0, False)
    cfg = load_config(project, env=env_for(home, AGI_STALE_AFTER="4"), traitlets={"stale_after": 6})
    assert cfg.stale_after == 6.0  # traitlets beat env
    write_json(project / ".agi/config.json", {"stale_after": 90, "persist_deltas": False})
    cfg = load_config(project, env=env_for(home), traitlets={"stale_after": 6})
    assert (cfg.stale_after, cfg.persist_deltas) == (90.0, False)
    with pytest.raises(ConfigError, match="environment: stale_after"):
        load_config(project, env=env_for(home, AGI_STALE_AFTER="0.1"))


def test_the_webhook_secret_is_the_servers_else_the_environments_else_the_files(
    home: Path,
) -> None:
    assert webhook_secret(env=env_for(home)) is None
    write_json(home / ".config/agi/credentials.json", {"openai_webhook_secret": "whsec_file"})
    assert webhook_secret(env=env_for(home)) == "whsec_file"
    env = env_for(home, OPENAI_WEBHOOK_SECRET="whsec_env", OTHER="whsec_other")
    assert webhook_secret(env=env) == "whsec_env"
    assert webhook_secret(env=env, env_var="OTHER") == "whsec_other"
    assert webhook_secret("whsec_trait", env=env) == "whsec_trait"


def test_the_servers_traits_of_project_settings_are_their_declarations() -> None:
    """``server.extension`` takes ``SERVER_KEYS`` as traitlets made from ``config`` (declared
    once), and its traitlets layer is what ``load_config`` validates."""
    from traitlets import Bool, Enum, Float, Unicode

    from agi_jupyter.server.extension import AgiExtensionApp

    traits = AgiExtensionApp.class_traits()
    kinds = {"persist_deltas": Bool, "wire": Enum, "stale_after": Float}
    for key in SERVER_KEYS:
        trait = traits[key]
        assert isinstance(trait, kinds.get(key, Unicode)), key
        assert trait.default_value is None
        assert trait.metadata["config"] is True
        assert trait.help.startswith(str(setting_field(key).description))
    assert list(traits["wire"].values) == ["http", "sdk"]
    app = AgiExtensionApp(wire="sdk", stale_after=5, database_url="")
    assert app.traitlets_layer() == {"wire": "sdk", "stale_after": 5.0}
