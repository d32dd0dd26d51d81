"""The command line: help for every subcommand, honest 'not yet', doctor, bench --list."""
import json

import pytest

from conftest import ROOT, run_cli

SUBCOMMANDS = ["migrate", "test", "replay", "bench", "parse", "spec", "doctor"]


@pytest.mark.parametrize("sub", SUBCOMMANDS)
def test_help(sub):
    p = run_cli(sub, "--help")
    assert p.returncode == 0 and "usage: xpiler " + sub in p.stdout


def test_no_command_is_usage_error():
    p = run_cli()
    assert p.returncode == 2


def test_unknown_option_is_usage_error():
    p = run_cli("test", "x.c", "--frobnicate")
    assert p.returncode == 2 and "Traceback" not in p.stderr


def test_replay_missing_log_is_bad_input(tmp_path):
    p = run_cli("replay", tmp_path / "nothing.jsonl")
    assert p.returncode == 2 and "XP4007" in p.stderr and "Traceback" not in p.stderr


def test_replay_rejects_non_log(tmp_path):
    (tmp_path / "x.jsonl").write_text('{"type": "pass"}\n')
    p = run_cli("replay", tmp_path / "x.jsonl")
    assert p.returncode == 2 and "XP4007" in p.stderr


def test_migrate_tune_with_an_unreachable_cluster_is_bad_input_before_anything_is_written(tmp_path):
    p = run_cli("migrate", "examples/relu/relu.c", "--to", "cuda", "--tune", "--cluster", "tcp://127.0.0.1:1",
                "-o", tmp_path / "o")
    assert p.returncode == 2 and "XP1205" in p.stderr
    try:
        import distributed  # noqa: F401  (the cluster extra; the GPU machine has none)
        assert "127.0.0.1:1" in p.stderr, p.stderr          # the unreachable address is named
    except ImportError:
        assert "xpiler[dist]" in p.stderr, p.stderr         # without Dask: the extra to install is named
    assert not (tmp_path / "o").exists()


def test_doctor_lists_every_dialect():
    p = run_cli("doctor", "--json")
    assert p.returncode == 0
    rows = json.loads(p.stdout)
    assert {r["dialect"] for r in rows} == {"c", "cuda", "hip", "bang"}
    assert any(r["substrate"].startswith("hw:cpu") for r in rows)


def test_bench_list_json():
    p = run_cli("bench", "--list", "--json")
    assert p.returncode == 0
    rows = [json.loads(l) for l in p.stdout.splitlines() if l.strip()]
    assert rows, "no examples discovered"
    for r in rows:
        assert set(r) >= {"op", "dialect", "variant", "source", "spec"}
        assert r["dialect"] in ("cuda", "hip", "bang", "c")


def test_spec_infer_cuda_launcher(tmp_path):
    (tmp_path / "k.cu").write_text(
        "__global__ void k(const float* a, float* b, int n) { int i = blockIdx.x*blockDim.x+threadIdx.x; if (i<n) b[i]=a[i]; }\n"
        "void k_host(const float* ha, float* hb, int n) {\n"
        "  float *a, *b; cudaMalloc(&a, n*sizeof(float)); cudaMalloc(&b, n*sizeof(float));\n"
        "  cudaMemcpy(a, ha, n*sizeof(float), cudaMemcpyHostToDevice);\n"
        "  k<<<(n+255)/256, 256>>>(a, b, n);\n"
        "  cudaMemcpy(hb, b, n*sizeof(float), cudaMemcpyDeviceToHost);\n}\n")
    p = run_cli("spec", "--infer", tmp_path / "k.cu")
    assert p.returncode == 0, p.stderr
    import tomllib
    spec = tomllib.loads(p.stdout)
    assert spec["entry"] == "k" and spec["dialect"] == "cuda"
    assert [a["role"] for a in spec["args"]] == ["in", "out", "scalar"]
    assert spec["args"][0]["shape"] == ["n"]
    assert spec["launch"]["grid"][0] == "(n+255)/256" and spec["launch"]["block"][0] == 256
    assert "XP1030" in p.stderr and "'n'" in p.stderr  # the value of n is not in the source


def test_spec_infer_plain_c(tmp_path):
    (tmp_path / "k.c").write_text("#define N 32\n#define M 8\nvoid k(const float* a, float* b) {\n"
                                  "  for (int i = 0; i < M; i++) for (int j = 0; j < N; j++) b[i*N+j] = a[j*M+i]; }\n")
    p = run_cli("spec", "--infer", tmp_path / "k.c")
    assert p.returncode == 0
    import tomllib
    spec = tomllib.loads(p.stdout)
    assert spec["args"][0]["shape"] == [256] and spec["args"][1]["shape"] == [256]
    assert spec["args"][1]["role"] == "out"


def test_spec_infer_missing_file():
    p = run_cli("spec", "--infer", "does/not/exist.cu")
    assert p.returncode == 2 and "XP1201" in p.stderr


def test_diagnostics_doc_is_current():
    from xpiler.diagnostics import render_markdown
    doc = ROOT / "docs" / "diagnostics.md"
    assert doc.is_file(), "run: python -m xpiler.diagnostics > docs/diagnostics.md"
    assert doc.read_text() == render_markdown(), "docs/diagnostics.md is stale: python -m xpiler.diagnostics > docs/diagnostics.md"


def test_bench_migrates_a_suite(tmp_path):
    import shutil
    suite = tmp_path / "suite"
    (suite / "relu").mkdir(parents=True)
    for f in ("relu.c", "relu.c.toml", "ref.py"):
        shutil.copy(ROOT / "examples" / "relu" / f, suite / "relu" / f)
    p = run_cli("bench", "--suite", suite, "--from", "c", "--to", "hip", "--json")
    assert p.returncode == 0, p.stdout + p.stderr
    rows = json.loads(p.stdout)
    assert rows == [dict(rows[0], verified=True)] and rows[0]["to"] == "hip"
