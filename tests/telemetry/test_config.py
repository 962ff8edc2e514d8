"""When telemetry is on, and what a run says of the CI it runs in: pure reads of the job's environment."""

from __future__ import annotations

from runner.telemetry.config import ci_attributes, collector_address, names_service, traces_url, wanted


def test_on_only_with_an_endpoint_and_not_disabled():
    assert not wanted({})
    assert not wanted({"OTEL_EXPORTER_OTLP_ENDPOINT": "  "})
    assert wanted({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"})
    assert wanted({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"})
    assert not wanted({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "TRUE"})
    assert wanted({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "false"})


def test_the_traces_url_and_the_probed_address_follow_the_exporter():
    assert traces_url({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}) == "http://c:4318/v1/traces"
    assert traces_url({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318/", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT":
                       "https://t/x"}) == "https://t/x"
    assert collector_address("https://user:pw@collector.example/v1/traces") == ("collector.example", 443)
    assert collector_address("http://127.0.0.1:4318/v1/traces") == ("127.0.0.1", 4318)
    assert collector_address("unix:///sock") is None


def test_the_ci_identity_from_github_and_gitlab():
    github = ci_attributes({"GITHUB_REPOSITORY": "o/r", "GITHUB_WORKFLOW": "ci", "GITHUB_RUN_ID": "7",
                            "GITHUB_SERVER_URL": "https://github.com", "GITHUB_SHA": "abc", "GITHUB_RUN_ATTEMPT": "2"})
    assert github == {"vcs.repository.name": "o/r", "cicd.pipeline.name": "ci", "cicd.pipeline.run.id": "7",
                      "vcs.ref.head.revision": "abc", "vcs.repository.url.full": "https://github.com/o/r",
                      "agent_run.ci.run_attempt": "2"}
    gitlab = ci_attributes({"CI_PROJECT_PATH": "g/p", "CI_PIPELINE_ID": "9", "CI_JOB_ID": "10",
                            "CI_PROJECT_URL": "https://gitlab.example/g/p"})
    assert gitlab == {"vcs.repository.name": "g/p", "cicd.pipeline.run.id": "9", "cicd.pipeline.task.run.id": "10",
                      "vcs.repository.url.full": "https://gitlab.example/g/p"}
    assert ci_attributes({}) == {}


def test_the_job_may_name_the_service():
    assert not names_service({})
    assert names_service({"OTEL_SERVICE_NAME": "ci-agent"})
    assert names_service({"OTEL_RESOURCE_ATTRIBUTES": "team=x, service.name=ci-agent"})
