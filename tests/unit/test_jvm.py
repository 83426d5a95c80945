"""The JVM artifacts: jvm/pom.xml (what `make jars` fetches) and wide_assets.jvm (what a session loads)
name the same pinned jars; a jar folder that lacks one is refused by name; the Connect server binds
to loopback and loads Delta."""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from wide_assets import jvm

ROOT = Path(__file__).resolve().parents[2]
POM = "{http://maven.apache.org/POM/4.0.0}"


def pom_coordinates() -> set[str]:
    project = ElementTree.parse(ROOT / "jvm" / "pom.xml").getroot()
    return {
        ":".join(d.findtext(f"{POM}{part}") or "" for part in ("groupId", "artifactId", "version"))
        for d in project.iter(f"{POM}dependency")
    }


def test_the_pom_fetches_the_jars_a_session_loads() -> None:
    assert set(jvm.DELTA_PACKAGES) <= pom_coordinates()
    checksummed = {line.split()[1] for line in (ROOT / "jvm" / "SHA256SUMS").read_text().splitlines()}
    assert {f"{c.split(':')[1]}-{c.split(':')[2]}.jar" for c in jvm.DELTA_PACKAGES} <= checksummed


def test_a_folder_without_the_jars_is_refused_naming_make_jars(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"lacks delta-spark_2\.13-4\.0\.1\.jar.*make jars"):
        jvm.delta_jars({jvm.JARS_VARIABLE: str(tmp_path)})


def test_without_a_folder_spark_resolves_the_same_coordinates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    conf = jvm.delta_conf({})
    assert conf["spark.jars.packages"].split(",") == list(jvm.DELTA_PACKAGES)
    assert conf["spark.sql.parquet.outputTimestampType"] == "TIMESTAMP_MICROS"


def test_the_connect_server_binds_to_loopback_with_delta(tmp_path: Path) -> None:
    jars = tmp_path / "jars"
    jars.mkdir()
    for name in ("delta-spark_2.13-4.0.1.jar", "delta-storage-4.0.1.jar"):
        (jars / name).touch()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(jvm.JARS_VARIABLE, str(jars))
        command = jvm.server_command(15002, "local[2]", {})
    assert command[command.index("--class") + 1] == jvm.CONNECT_SERVER_CLASS
    assert "spark.connect.grpc.binding.address=127.0.0.1" in command
    assert f"spark.jars={jars / 'delta-spark_2.13-4.0.1.jar'},{jars / 'delta-storage-4.0.1.jar'}" in command


def test_a_cluster_on_this_machine_binds_spark_to_loopback_unless_an_address_is_named() -> None:
    cluster = "local-cluster[2,1,1024]"
    assert jvm.loopback_env(cluster, {}) == {"SPARK_LOCAL_IP": "127.0.0.1"}
    assert jvm.loopback_env(cluster, {"SPARK_LOCAL_IP": "10.0.0.5"}) == {}
    # One JVM without a web UI keeps Spark's choice; a remote cluster's executors must reach the driver.
    assert jvm.loopback_env("local[2]", {}) == jvm.loopback_env("spark://10.0.0.9:7077", {}) == {}
