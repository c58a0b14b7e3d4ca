"""The Python module against the command line it mirrors: each function's dict is the command's
--json output, so these compare the two on shipped scenarios and real logs rather than restate
numbers. Run by ctest (python/CMakeLists.txt) with PYTHONPATH=<build>/python and SPECSIM_BIN set to
the specsim built beside the module."""
import json
import math
import os
import pathlib
import subprocess

import pytest

import specsim

ROOT = pathlib.Path(__file__).resolve().parents[2]
KIMI = "kimi-k2.5-eagle3-8x-rtx-pro-6000"


def cli_json(*args):
    """`specsim ARGS --json`, parsed: what the module must reproduce."""
    out = subprocess.run([os.environ["SPECSIM_BIN"], *args, "--json"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def test_predict_is_predict_json():
    # The acceptance case of issue 35, and the same figures as the command's JSON, key for key.
    got = specsim.predict(specsim.load(KIMI))
    assert got == cli_json("predict", "--scenario", KIMI)
    assert got["speculative"]["tokens_per_s"] > 0
    # The call a plan acts on: pays or loses only where the whole band clears the plain rate.
    band, plain = got["speculative"]["band"], got["baseline"]["tokens_per_s"]
    expected = ("pays" if band["p10_tokens_per_s"] > plain else
                "loses" if band["p90_tokens_per_s"] < plain else "too close to call")
    assert got["speculative"]["call"] == expected


def test_predict_at_concurrency_levels_carries_each_band_and_the_transfer_warning():
    # A SpecForge row measured end to end at batch 1: each level has predict's band, and carrying
    # the batch-1 residual to 16 is said, as `predict --concurrency` says it.
    row = str(ROOT / "validation/specforge-issue-339-2xh100/sf339-qwen3-30b-a3b-eagle3-tp2-bs1-3-1-4.yaml")
    got = specsim.predict(specsim.load(row, set={"workload.concurrency": "1,16"}))
    assert got == cli_json("predict", "--scenario", row, "--concurrency", "1,16")
    for level in got["concurrency"]:
        spec = level["speculative"]
        assert spec["p10_aggregate_tokens_per_s"] < spec["aggregate_tokens_per_s"] < spec["p90_aggregate_tokens_per_s"]
    # At 16 the band also draws the error of carrying batch 1's calibration there: the committed
    # file's per-unit-ln sigma times ln 16; at the measured batch nothing.
    per_ln = got["concurrency"][1]["speculative"]["band_transfer_sigma"] / math.log(16)
    assert got["concurrency"][0]["speculative"]["band_transfer_sigma"] == 0
    assert 0.01 < per_ln < 0.5
    assert any("charged unchanged at every level" in w for w in got["warnings"])


def test_expert_kernel_prior_and_a_set_value_reach_python():
    # vLLM's NVFP4 experts on RTX PRO 6000s take the engine file's expert-kernel prior; a value set
    # from Python wins, as --set's does, and the band lists the prior only where it applies.
    name = "qwen3.5-397b-a17b-nvfp4-mtp-4x-rtx-pro-6000"
    got = specsim.predict(specsim.load(name))
    assert got["calibration"]["expert_bandwidth_efficiency"]["value"] == 0.64
    assert got["calibration"]["expert_bandwidth_efficiency"]["origin"].startswith("prior: 64%")
    assert "expert bandwidth efficiency" in got["speculative"]["band"]["priors"]
    set_ = specsim.predict(specsim.load(name, set={"compute.expert_bandwidth_efficiency": 0.8}))
    assert set_["calibration"]["expert_bandwidth_efficiency"] == {"value": 0.8, "origin": "set"}
    assert "expert bandwidth efficiency" not in set_["speculative"]["band"]["priors"]
    assert set_ == cli_json("predict", "--scenario", name, "--set", "compute.expert_bandwidth_efficiency=0.8")


def test_set_patches_match_the_command_lines_set():
    # A dict of typed values is spelled as --set spells it: 2 -> "2", 0.6 -> "0.6".
    s = specsim.load(KIMI, set={"speculation.num_steps": 2, "acceptance.accept": 0.6})
    assert s.patches == ["speculation.num_steps=2", "acceptance.accept=0.6"]
    assert specsim.predict(s) == cli_json("predict", "--scenario", KIMI, "--set", "speculation.num_steps=2",
                                          "--set", "acceptance.accept=0.6")


def test_every_shipped_scenario_predicts_as_the_command_does():
    names = specsim.scenarios()
    assert KIMI in names
    for name in names:
        assert specsim.predict(specsim.load(name)) == cli_json("predict", "--scenario", name), name


def test_an_engines_average_acceptance_rate_reaches_python():
    # vLLM's "Avg Draft acceptance rate: 69.1%" at K = 3 is tau 1 + 0.691 x 3 = 3.073; the patch
    # replaces the file's accept and depth profile, as --set and --draft-acceptance-rate do.
    got = specsim.predict(specsim.load(KIMI, set={"acceptance.draft_acceptance_rate": 0.691}))
    assert abs(got["speculative"]["tokens_per_cycle"] - 3.073) < 1e-9
    assert got == cli_json("predict", "--scenario", KIMI, "--draft-acceptance-rate", "0.691")


def test_scenario_says_what_it_loaded():
    s = specsim.load(KIMI)
    assert (s.source, s.name, s.topology, s.batch) == (KIMI, KIMI, "8x-rtx-pro-6000-pcie5", 1)


def test_errors_carry_file_line_and_key():
    bad = ROOT / "tests/data/invalid/scenario/accept-out-of-range.yaml"
    with pytest.raises(specsim.Error) as e:
        specsim.load(bad)
    # The loader's message as `specsim predict` prints it (tests/io/test_load.cpp checks the same).
    assert "accept-out-of-range.yaml:49:11: acceptance.accept: = 1.2: must be in [0, 1]" in str(e.value)
    assert (e.value.line, e.value.column, e.value.key) == (49, 11, "acceptance.accept")


def test_unknown_names_list_the_valid_ones():
    with pytest.raises(specsim.Error, match=KIMI):
        specsim.load("no-such-scenario")


def test_sweep_rows_are_the_commands_points(monkeypatch):
    # Without pandas (hidden here) the rows are sweep --json's points, best first.
    monkeypatch.setitem(__import__("sys").modules, "pandas", None)
    rows = specsim.sweep(specsim.load(KIMI), vary={"speculation.num_steps": range(1, 5)})
    want = cli_json("sweep", "--scenario", KIMI, "--vary", "speculation.num_steps=1,2,3,4")["points"]
    assert rows == want
    assert len(rows) == 4


def test_sweep_at_concurrency_levels_gives_one_row_per_level(monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "pandas", None)
    rows = specsim.sweep(specsim.load(KIMI), vary={"speculation.num_steps": "1..3"}, concurrency=[1, 4])
    want = cli_json("sweep", "--scenario", KIMI, "--vary", "speculation.num_steps=1..3", "--concurrency", "1,4")
    assert [r["concurrency"] for r in rows] == [1, 4]
    assert rows == want["concurrency"]


def test_sweep_is_a_dataframe_with_pandas():
    pandas = pytest.importorskip("pandas")
    frame = specsim.sweep(specsim.load(KIMI), vary={"speculation.num_steps": [1, 2]})
    assert isinstance(frame, pandas.DataFrame)
    assert "set.speculation.num_steps" in frame.columns  # nested keys joined by dots, as in the CSV


def test_sweep_without_axes_says_what_is_missing():
    with pytest.raises(specsim.Error, match="vary"):
        specsim.sweep(specsim.load(KIMI))


def test_rank_is_rank_json():
    assert specsim.rank(specsim.load(KIMI)) == cli_json("rank", "--scenario", KIMI)


def test_validate_is_validate_json():
    row = ROOT / "validation/gpustack-qwen3-8b-h100"
    assert specsim.validate([row]) == cli_json("validate", str(row))


def test_calibrate_nccl_writes_the_profile_the_command_writes(tmp_path):
    log = ROOT / "calibration/nccl/chlc-8x4090-nop2p-sys.log"
    got = specsim.calibrate_nccl(log, tmp_path / "mine.yaml")
    (tmp_path / "cli").mkdir()
    subprocess.run([os.environ["SPECSIM_BIN"], "calibrate", "nccl", str(log), "-o", str(tmp_path / "cli" / "mine.yaml")],
                   check=True, capture_output=True)
    # The profile records the command that wrote it and when (to the second: the two runs may fall
    # in different seconds); the rest is the same text.
    strip = lambda text: [l for l in text.splitlines() if "calibrate nccl" not in l and "date_utc:" not in l]
    assert strip(got["yaml"]) == strip((tmp_path / "cli" / "mine.yaml").read_text())
    assert got["report"].startswith("wrote ")
    assert "mine" in got["yaml"]


def test_calibrate_nccl_failure_is_an_error_with_the_commands_message(tmp_path):
    not_a_log = ROOT / "models/gpu/h200.yaml"
    with pytest.raises(specsim.Error) as e:
        specsim.calibrate_nccl(not_a_log, tmp_path / "x.yaml")
    assert "h200.yaml" in str(e.value) and not str(e.value).startswith("specsim:")


def test_breakeven_is_breakeven_json():
    s = specsim.load(KIMI, set=["speculation.num_steps=2"])
    assert specsim.breakeven(s) == cli_json("breakeven", "--scenario", KIMI, "--set", "speculation.num_steps=2")


def test_comm_is_comm_json():
    profile = "rtx-pro-6000-8x-pcie5-aic-nccl"
    got = specsim.comm(profile, 8, ["14KiB", 1 << 20])
    assert got == cli_json("comm", "--profile", profile, "--ranks", "8", "--size", f"14KiB,{1 << 20}")
    assert [p["bytes"] for p in got["points"]] == [14 * 1024, 1 << 20]


def test_check_returns_the_normalised_file():
    text = specsim.check(ROOT / "models/gpu/h200.yaml")
    out = subprocess.run([os.environ["SPECSIM_BIN"], "check", str(ROOT / "models/gpu/h200.yaml")],
                         check=True, capture_output=True, text=True).stdout
    assert out.endswith(text)  # the command opens with a "# FILE: ok" line


def cli_text(*args):
    """`specsim ARGS` as it prints: (exit code, stdout, stderr)."""
    out = subprocess.run([os.environ["SPECSIM_BIN"], *args], capture_output=True, text=True)
    return out.returncode, out.stdout, out.stderr


def test_emit_is_predict_emit_on_every_shipped_scenario_and_engine():
    # The same launch script the command prints; where the engine cannot run the setting, the same
    # refusal as specsim.Error (the command exits 1 with it).
    for name in specsim.scenarios():
        s = specsim.load(name)
        for engine in ("vllm", "sglang", "trtllm"):
            code, out, err = cli_text("predict", "--scenario", name, "--emit", engine)
            if code == 0:
                assert specsim.emit(s, engine) == out, (name, engine)
            else:
                with pytest.raises(specsim.Error) as e:
                    specsim.emit(s, engine)
                assert str(e.value) in err, (name, engine)


def test_emit_of_a_sweep_is_sweep_emit():
    s = specsim.load(KIMI)
    _, out, _ = cli_text("sweep", "--scenario", KIMI, "--vary", "speculation.num_steps=1,2,3,4", "--emit", "sglang")
    assert specsim.emit(s, "sglang", vary={"speculation.num_steps": range(1, 5)}) == out
    # Per concurrency level (both pick the same K here: one command).
    _, out, _ = cli_text("sweep", "--scenario", KIMI, "--vary", "speculation.num_steps=1..3", "--concurrency", "1,4",
                         "--emit", "trtllm")
    assert specsim.emit(s, "trtllm", vary={"speculation.num_steps": "1..3"}, concurrency=[1, 4]) == out
    assert "trtllm-serve" in out


def test_predict_and_rank_carry_the_launch_with_emit():
    s = specsim.load(KIMI)
    got = specsim.predict(s, emit="vllm")
    assert got == cli_json("predict", "--scenario", KIMI, "--emit", "vllm")
    assert got["launch"]["engine"] == "vllm"
    assert specsim.rank(s, emit="sglang") == cli_json("rank", "--scenario", KIMI, "--emit", "sglang")
    with pytest.raises(specsim.Error, match="'tgi' is not an engine"):
        specsim.emit(s, "tgi")


def test_rank_runs_on_every_shipped_scenario_as_the_command_does():
    # Without a catalogue of its own, every box ranks the catalogue for any box (issue 35 item 4).
    for name in specsim.scenarios():
        assert specsim.rank(specsim.load(name), path_steps=1) == cli_json("rank", "--scenario", name, "--path-steps", "1"), name
