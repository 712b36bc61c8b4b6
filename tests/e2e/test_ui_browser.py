"""The Dagster UI in a real browser: a maintainer builds the smoke dataset the documented way, one click.

`cacheeval ui` starts `dagster dev` on a free port with a temporary DAGSTER_HOME and cache folder,
the button's defaults set to the smoke profile and a temporary output folder
($CACHEEVAL_UI_PROFILE, $CACHEEVAL_UI_OUT_DIR); headless Chromium (Debian's chromium and
chromium-driver, installed by .ci/install) opens the asset graph, goes to Jobs -> build_dataset and
clicks the main "Materialize all" button, once. The test fails if any dialog opens instead of a
run starting (a partition to choose, "This job is partitioned. Are you sure...", a launchpad), or
if the click starts a backfill. It follows the "Launched run" notice to the run, waits for it, and
checks through the server's GraphQL API that it was ONE run of build_dataset, with no partition,
over every domain, with every blocking check passed; that the files landed in the chosen folder
(readable, matching the manifest) and not in the project's outputs/; that the asset pages show the
metadata (a line per domain, the row preview with verification_method, the baselines' headline as a
table) and the calibration plot as an image rendered in the page; and that SIGTERM to `cacheeval ui`
leaves no process behind. Screenshots go to <tmp>/screenshots.
"""
from __future__ import annotations

import base64
import hashlib
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
LOCATION = "pipeline.app.definitions"
JOB = "build_dataset"
START_TIMEOUT = 240
RUN_TIMEOUT = 1500  # when run alone the cache is cold: the smoke build embeds its rows with every model

pytestmark = [pytest.mark.slow, pytest.mark.models]


def _require_browser():
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.is_file()]
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing.append("the selenium package")
    if missing:
        pytest.fail(f"{', '.join(missing)} not found: run `bash .ci/install` (it installs Debian's chromium "
                    "and chromium-driver and the pinned selenium)", pytrace=False)


# ---------------------------------------------------------------- processes

def _proc_table() -> dict[int, tuple[int, int, str]]:
    """pid -> (parent pid, session id, start time) of every process, from /proc."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            raw = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = raw[raw.rindex(")") + 2:].split()  # after "pid (comm) "
        if fields[0] == "Z":  # a zombie has exited; it only waits to be reaped
            continue
        table[int(entry)] = (int(fields[1]), int(fields[3]), fields[19])
    return table


def _descendants(root: int) -> dict[int, str]:
    """pid -> start time of every living descendant of `root`."""
    table = _proc_table()
    found, frontier = {}, [root]
    while frontier:
        parent = frontier.pop()
        for pid, (ppid, _, started) in table.items():
            if ppid == parent and pid not in found:
                found[pid] = started
                frontier.append(pid)
    return found


def _alive(processes: dict[int, str]) -> list[int]:
    table = _proc_table()
    return sorted(pid for pid, started in processes.items() if pid in table and table[pid][2] == started)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---------------------------------------------------------------- the server's GraphQL API

def _gql(base: str, query: str, **variables) -> dict:
    req = urllib.request.Request(f"{base}/graphql", data=json.dumps({"query": query, "variables": variables}).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as resp:
        body = json.loads(resp.read())
    assert "errors" not in body, body["errors"]
    return body["data"]


RUNS = """{ runsOrError { ... on Runs { results { runId jobName status tags { key value } } } } }"""
BACKFILLS = """{ partitionBackfillsOrError { ... on PartitionBackfills { results { id } } } }"""
RUN_EVENTS = """query($id: ID!, $after: String) { logsForRun(runId: $id, afterCursor: $after) {
  ... on EventConnection { cursor hasMore events { __typename
    ... on AssetCheckEvaluationEvent { evaluation { checkName success assetKey { path } } }
    ... on MaterializationEvent { assetKey { path } partition }
    ... on ExecutionStepFailureEvent { stepKey error { message } } } } } }"""


def _run_events(base: str, run_id: str) -> list[dict]:
    events, cursor = [], None
    while True:
        page = _gql(base, RUN_EVENTS, id=run_id, after=cursor)["logsForRun"]
        events += page["events"]
        cursor = page["cursor"]
        if not page["hasMore"]:
            return events


def _wait_http(url: str, proc: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"cacheeval ui exited early:\n{log.read_text()[-3000:]}"
        try:
            with urllib.request.urlopen(url, timeout=5) as resp:
                if resp.status == 200:
                    return
        except OSError:
            pass
        time.sleep(1)
    pytest.fail(f"the UI did not answer at {url} within {START_TIMEOUT}s:\n{log.read_text()[-3000:]}")


# ---------------------------------------------------------------- the browser

def _browser(profile_dir: Path):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = str(CHROMIUM)
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 f"--user-data-dir={profile_dir}", "--window-size=1600,1000"):
        opts.add_argument(flag)
    service = Service(str(CHROMEDRIVER))
    driver = webdriver.Chrome(service=service, options=opts)
    return driver, service


def _wait(driver, xpath: str, timeout: float = 90, clickable: bool = False):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    cond = ec.element_to_be_clickable if clickable else ec.visibility_of_element_located
    return WebDriverWait(driver, timeout).until(cond((By.XPATH, xpath)))


def _click(driver, xpath: str, timeout: float = 90):
    _wait(driver, xpath, timeout, clickable=True).click()


def _snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()} if folder.is_dir() else {}


# ---------------------------------------------------------------- the test

def test_a_maintainer_builds_the_smoke_dataset_in_one_run_from_the_ui(tmp_path, smoke_cache):
    _require_browser()
    shots, out, home = (tmp_path / n for n in ("screenshots", "out", "dagster_home"))
    cache = smoke_cache  # warm when tests/e2e/test_build.py ran first (as in CI); cold otherwise
    shots.mkdir()
    committed = _snapshot(ROOT / "outputs")
    ui_default = _snapshot(ROOT / "build" / "ui-outputs")
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    log = tmp_path / "ui.log"
    env = {**os.environ, "DAGSTER_HOME": str(home), "CACHEEVAL_CACHE_DIR": str(cache),
           "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf"),
           # what the one click builds: the smoke profile, into a folder of this test's
           "CACHEEVAL_UI_PROFILE": "smoke", "CACHEEVAL_UI_OUT_DIR": str(out)}
    with open(log, "wb") as fh:  # the same command as `cacheeval ui --port PORT`
        ui = subprocess.Popen([sys.executable, "-m", "pipeline.app.cli", "ui", "--port", str(port)], cwd=tmp_path,
                              env=env, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
    started: dict[int, str] = {}  # every process of the UI seen, by pid and start time
    try:
        _wait_http(f"{base}/server_info", ui, log)
        started.update(_descendants(ui.pid))
        driver, service = _browser(tmp_path / "chromium-profile")
        browser = {service.process.pid: _proc_table()[service.process.pid][2], **_descendants(service.process.pid)}
        try:
            run_id = _launch_from_the_ui(driver, base, out, shots)
            _check_run(driver, base, run_id, out, shots, lambda: started.update(_descendants(ui.pid)))
        finally:
            browser.update(_descendants(service.process.pid))
            driver.quit()
            _wait_gone(browser, 30)
        assert not _alive(browser), f"chromium or chromedriver still running: {_alive(browser)}"
        assert _snapshot(ROOT / "outputs") == committed, "the UI run changed the committed outputs/"
        assert _snapshot(ROOT / "build" / "ui-outputs") == ui_default
    finally:
        started.update(_descendants(ui.pid))
        if ui.poll() is None:
            ui.send_signal(signal.SIGTERM)  # what a maintainer's kill, or Ctrl-C in its terminal, does
        try:
            ui.wait(timeout=120)
        except subprocess.TimeoutExpired:
            ui.kill()
        left = _alive(started)
        for pid in left:  # never leave them to the next test
            os.kill(pid, signal.SIGKILL)
    assert ui.returncode == 0, log.read_text()[-3000:]
    assert started and not left, f"processes left after SIGTERM to cacheeval ui: {left}"
    text = log.read_text()
    assert "superseded" not in text and "will not be used" not in text, text[:3000]


def _wait_gone(processes: dict[int, str], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while _alive(processes) and time.monotonic() < deadline:
        time.sleep(0.5)


def _launch_from_the_ui(driver, base: str, out: Path, shots: Path) -> str:
    """The documented path, click by click; the id of the run it starts."""
    from selenium.webdriver.common.by import By

    # 1. the asset graph, where a maintainer lands
    driver.get(f"{base}/asset-groups")
    _wait(driver, "//button[contains(., 'Materialize all')]")
    for group in ("sources", "generation", "verification", "assembly", "manifest", "evolving"):
        _wait(driver, f"//*[normalize-space(text())='{group}']")
    driver.save_screenshot(str(shots / "1-asset-graph.png"))

    # 2. Jobs -> build_dataset: its description says what one click builds, and where
    _click(driver, "//a[normalize-space(.)='Jobs']")
    _click(driver, f"//a[normalize-space(.)='{JOB}']")
    _wait(driver, "//*[contains(text(), 'The whole dataset in ONE run')]")
    page = driver.find_element(By.TAG_NAME, "body").text
    assert f"Profile smoke, written into {out}/" in " ".join(page.split()), page[:3000]
    driver.save_screenshot(str(shots / "2-job-page.png"))

    # 3. the main button, once: "Materialize all" without an ellipsis (no partitions to choose)
    _click(driver, "//button[normalize-space(.)='Materialize all']")
    notice = _launched_without_a_dialog(driver, shots)
    driver.save_screenshot(str(shots / "3-launched.png"))
    short_id = notice.text.split()[-1]  # "Launched run 1a2b3c4d"
    assert not _gql(base, BACKFILLS)["partitionBackfillsOrError"]["results"], "the click started a backfill"
    [run_id] = [r["runId"] for r in _gql(base, RUNS)["runsOrError"]["results"]]
    assert run_id.startswith(short_id), (run_id, notice.text)

    # 4. the notice's View opens the new run's page (the notice fades after a while: else its address)
    from selenium.webdriver.support.ui import WebDriverWait

    views = [a for a in driver.find_elements(By.XPATH, "//a[normalize-space(.)='View']") if a.is_displayed()]
    if views:
        views[0].click()
    else:
        driver.get(f"{base}/runs/{run_id}")
    WebDriverWait(driver, 120).until(lambda d: f"/runs/{run_id}" in d.current_url)
    return run_id


def _launched_without_a_dialog(driver, shots: Path, timeout: float = 240):
    """After the click: the "Launched run" notice, or the test fails on the first dialog that opens
    instead (a partition to choose, "This job is partitioned. Are you sure...", a launchpad, any
    confirmation): one click must start the run."""
    from selenium.webdriver.common.by import By

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        dialogs = [d.text for d in driver.find_elements(By.XPATH, "//*[@role='dialog' or @role='alertdialog']")
                   if d.is_displayed() and d.text.strip()]
        if dialogs:
            driver.save_screenshot(str(shots / "3-unexpected-dialog.png"))
            about = "about partitions " if any("partition" in t.lower() for t in dialogs) else ""
            pytest.fail(f"Materialize all opened a dialog {about}instead of starting the run: {dialogs[0][:500]!r}",
                        pytrace=False)
        notices = [n for n in driver.find_elements(By.XPATH, "//*[contains(text(), 'Launched run')]") if n.is_displayed()]
        if notices:
            return notices[0]
        time.sleep(0.5)
    driver.save_screenshot(str(shots / "3-nothing.png"))
    pytest.fail(f"no run launched {timeout:.0f}s after clicking Materialize all", pytrace=False)


def _check_run(driver, base: str, run_id: str, out: Path, shots: Path, note_processes) -> None:
    from selenium.webdriver.common.by import By

    from domains import domain_names
    from pipeline.app.definitions import all_checks

    t0 = time.monotonic()
    driver.get("about:blank")  # the live run page re-renders every log line: spare the CPU while waiting
    while True:
        runs = _gql(base, RUNS)["runsOrError"]["results"]
        run = next(r for r in runs if r["runId"] == run_id)
        if run["status"] in ("SUCCESS", "FAILURE", "CANCELED"):
            break
        assert time.monotonic() - t0 < RUN_TIMEOUT, f"run {run_id} not finished after {RUN_TIMEOUT}s"
        note_processes()
        time.sleep(3)
    print(f"\nUI run of {JOB} (smoke profile) finished in {time.monotonic() - t0:.0f}s; "
          f"screenshots in {shots}")
    driver.get(f"{base}/runs/{run_id}")
    _wait(driver, "//*[normalize-space(text())='Success' or normalize-space(text())='Failure']", 120)
    _wait(driver, "//*[normalize-space(text())='RUN_SUCCESS' or normalize-space(text())='RUN_FAILURE']", 120)
    driver.save_screenshot(str(shots / "5-run.png"))

    # one run, of build_dataset, with no partition: candidate_rows and verified_rows once, every domain inside
    events = _run_events(base, run_id)
    failures = [f"{e['stepKey']}: {e['error']['message'][:500]}" for e in events
                if e["__typename"] == "ExecutionStepFailureEvent"]
    assert [r["runId"] for r in runs] == [run_id] and run["jobName"] == JOB, runs
    assert run["status"] == "SUCCESS", failures
    assert not _gql(base, BACKFILLS)["partitionBackfillsOrError"]["results"]
    tags = {t["key"]: t["value"] for t in run["tags"]}
    assert not [k for k in tags if "partition" in k], tags
    for key in ("candidate_rows", "verified_rows"):
        assert [e["partition"] for e in events if e["__typename"] == "MaterializationEvent"
                and e["assetKey"]["path"] == [key]] == [None], key

    # every blocking check ran and passed
    checks = {e["evaluation"]["checkName"]: e["evaluation"]["success"] for e in events
              if e["__typename"] == "AssetCheckEvaluationEvent"}
    blocking = {spec.name for c in all_checks for spec in c.check_specs if spec.blocking}
    assert blocking and set(checks) >= blocking, sorted(blocking - set(checks))
    assert all(checks[name] for name in blocking), {n: ok for n, ok in checks.items() if not ok}

    # the files are in the chosen folder, readable, as the manifest says
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["profile"] == "smoke" and len((out / "cachebench.jsonl").read_text().splitlines()) == 250
    for rel, sha in manifest["outputs"].items():
        assert hashlib.sha256((out / rel).read_bytes()).hexdigest() == sha, rel
        assert stat.S_IMODE((out / rel).stat().st_mode) & 0o044 == 0o044, f"{rel} is not readable by others"

    # the asset pages show the cells, kappa with the held-out embedder, a preview, where it wrote
    driver.set_window_size(1600, 2600)  # the whole metadata table in one screenshot
    driver.get(f"{base}/assets/candidate_rows")  # every domain of the one step, a line each
    _wait(driver, "//*[normalize-space(text())='per_domain']", 120)
    page = driver.find_element(By.TAG_NAME, "body").text
    assert all(d in page for d in domain_names()) and "total" in page, page[:3000]
    driver.save_screenshot(str(shots / "6-candidate-rows-asset.png"))
    driver.get(f"{base}/assets/cachebench")
    _wait(driver, "//*[normalize-space(text())='held_out_embedder']", 120)
    page = driver.find_element(By.TAG_NAME, "body").text
    assert "rows_per_cell" in page and "use_multilingual_v3" in page and "construction_methods" in page, page[:3000]
    driver.save_screenshot(str(shots / "7-cachebench-asset.png"))
    _click(driver, "//tr[.//*[normalize-space(text())='preview']]//*[contains(text(), '[Show Markdown]')]")
    preview = _wait(driver, "//*[@role='dialog']//table", 60).text
    assert "query_a" in preview and "cb-code-0001" in preview and "verification_method" in preview, preview
    assert "policy_no_cache" in preview, preview  # why an EQUIV row there is a MISS
    driver.save_screenshot(str(shots / "7b-cachebench-preview.png"))
    driver.get(f"{base}/assets/benchmark_files")
    _wait(driver, "//*[normalize-space(text())='output_folder']", 120)
    page = driver.find_element(By.TAG_NAME, "body").text
    assert str(out) in page and manifest["outputs"]["cachebench.jsonl"][:16] in page, page[:3000]
    driver.save_screenshot(str(shots / "8-benchmark-files-asset.png"))
    driver.get(f"{base}/assets/baseline_reports")  # the headline is a table, not JSON
    headline = _wait(driver, "//tr[.//*[normalize-space(text())='headline']]//table", 120).text
    assert "always_miss" in headline and "fhr" in headline and "{" not in headline, headline

    # the calibration plot: an image in the page, its source the PNG the asset wrote
    driver.get(f"{base}/assets/calibration_report")
    _click(driver, "//tr[.//*[normalize-space(text())='plot']]//*[contains(text(), '[Show Markdown]')]", 120)
    img = _wait(driver, "//*[@role='dialog']//img", 60)
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, 30).until(lambda d: d.execute_script("return arguments[0].complete", img))
    src = img.get_attribute("src")
    assert src.startswith("data:image/png;base64,"), src[:80]
    assert base64.b64decode(src.split(",", 1)[1]) == (out / "reports" / "calibration.png").read_bytes()
    width = driver.execute_script("return arguments[0].naturalWidth", img)
    assert width > 0, "the calibration plot did not render"
    driver.save_screenshot(str(shots / "9-calibration-plot.png"))
