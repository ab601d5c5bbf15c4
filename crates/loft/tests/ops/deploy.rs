//! The ops pack in `deploy/`: the Grafana dashboard (`deploy/grafana/loft.json`) and the
//! Prometheus alert rules (`deploy/prometheus/alerts.yml`) name only metrics a real Loft
//! exports (read from its `/metrics`), the dashboard is a well-formed Grafana dashboard,
//! every PromQL expression of both parses (`promtool check rules`), and the rules' own
//! tests pass (`promtool test rules`).

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde_json::{json, Value};

use crate::harness::Server;

fn deploy(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../deploy")
        .join(path)
}

fn dashboard() -> Value {
    let text = std::fs::read_to_string(deploy("grafana/loft.json")).expect("dashboard");
    serde_json::from_str(&text).expect("the dashboard is JSON")
}

/// Every PromQL expression of the dashboard: the panels' targets and the template
/// variables' queries.
fn dashboard_exprs(d: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for p in d["panels"].as_array().expect("panels") {
        for t in p["targets"].as_array().into_iter().flatten() {
            out.push(t["expr"].as_str().expect("a target has an expr").to_owned());
        }
    }
    out
}

/// The `loft_*` metric names `text` mentions.
fn loft_names(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut rest = text;
    while let Some(i) = rest.find("loft_") {
        let boundary = rest[..i]
            .chars()
            .last()
            .is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '_'));
        let tail = &rest[i..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        if boundary {
            names.insert(tail[..end].to_owned());
        }
        rest = &tail[end..];
    }
    names
}

/// The metric names a Loft with some activity exports: every `# TYPE` family, and a
/// histogram's `_bucket`, `_sum` and `_count` series.
async fn exported() -> BTreeSet<String> {
    let s = Server::start();
    s.sqs("CreateQueue", json!({"QueueName": "work"})).await;
    s.sqs(
        "SendMessage",
        json!({"QueueUrl": s.queue_url("work"), "MessageBody": "x"}),
    )
    .await;
    let text = s
        .http
        .get(s.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let mut names = BTreeSet::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("# TYPE ") else {
            continue;
        };
        let mut parts = rest.split(' ');
        let (name, kind) = (parts.next().unwrap(), parts.next().unwrap_or(""));
        names.insert(name.to_owned());
        if kind == "histogram" {
            for suffix in ["_bucket", "_sum", "_count"] {
                names.insert(format!("{name}{suffix}"));
            }
        }
    }
    names
}

#[test]
fn the_dashboard_is_a_grafana_dashboard_with_a_query_in_every_panel() {
    let d = dashboard();
    assert_eq!(d["title"], "Loft");
    assert!(d["uid"].as_str().is_some_and(|u| !u.is_empty()));
    assert!(d["schemaVersion"].as_u64().is_some_and(|v| v >= 30));
    let mut ids = BTreeSet::new();
    for p in d["panels"].as_array().expect("panels") {
        let id = p["id"].as_u64().expect("a panel id");
        assert!(ids.insert(id), "panel id {id} twice");
        let g = &p["gridPos"];
        let (x, w) = (g["x"].as_u64().unwrap(), g["w"].as_u64().unwrap());
        assert!(x + w <= 24 && g["h"].as_u64().unwrap() > 0, "gridPos {g}");
        if p["type"] == "row" {
            continue;
        }
        let targets = p["targets"].as_array().expect("targets");
        assert!(!targets.is_empty(), "panel {} has no query", p["title"]);
        for t in targets {
            assert!(
                t["expr"].as_str().is_some_and(|e| !e.trim().is_empty()),
                "{t}"
            );
        }
    }
    let variables: Vec<&str> = d["templating"]["list"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap())
        .collect();
    // Every `$variable` a query uses is defined (Grafana's own `$__rate_interval` aside).
    for e in dashboard_exprs(&d) {
        for part in e.split('$').skip(1) {
            let name: String = part
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            assert!(
                name == "__rate_interval" || variables.contains(&name.as_str()),
                "{e} uses ${name}, which is not defined"
            );
        }
    }
}

#[tokio::test]
async fn the_dashboard_and_the_alerts_name_only_metrics_loft_exports() {
    let exported = exported().await;
    let alerts = std::fs::read_to_string(deploy("prometheus/alerts.yml")).expect("alerts");
    let dashboard = std::fs::read_to_string(deploy("grafana/loft.json")).expect("dashboard");
    for (file, text) in [("alerts.yml", &alerts), ("loft.json", &dashboard)] {
        let named = loft_names(text);
        assert!(named.len() >= 4, "{file} names {named:?}");
        let unknown: Vec<&String> = named.difference(&exported).collect();
        assert!(
            unknown.is_empty(),
            "{file} names metrics Loft does not export: {unknown:?}; it exports {exported:?}"
        );
    }
    // The five alerts the ops pack promises.
    for alert in [
        "LoftQueueBacklogGrowing",
        "LoftOldestMessageTooOld",
        "LoftDeadLetterQueueNotEmpty",
        "LoftSnsDeliveriesFailing",
        "LoftNodeDown",
    ] {
        assert!(alerts.contains(&format!("alert: {alert}")), "{alert}");
    }
}

#[test]
fn promtool_parses_every_expression_and_the_alert_tests_pass() {
    let need = crate::skips::promtool();
    if need.missing.is_some() {
        need.skip("deploy::promtool_parses_every_expression_and_the_alert_tests_pass");
        return;
    }
    // The dashboard's expressions as recording rules, Grafana's variables filled in.
    let dir = tempfile::tempdir().unwrap();
    let mut rules = String::from("groups:\n  - name: dashboard\n    rules:\n");
    for (i, e) in dashboard_exprs(&dashboard()).iter().enumerate() {
        let e = e
            .replace("$__rate_interval", "5m")
            .replace("$instance", ".*")
            .replace("$queue", ".*");
        rules.push_str(&format!(
            "      - record: dashboard:panel{i}\n        expr: {}\n",
            serde_json::to_string(&e).unwrap()
        ));
    }
    let path = dir.path().join("dashboard-rules.yml");
    std::fs::write(&path, rules).unwrap();
    for args in [
        vec!["check", "rules", path.to_str().unwrap()],
        vec!["check", "rules", "alerts.yml"],
        vec!["test", "rules", "alerts_test.yml"],
    ] {
        let out = std::process::Command::new("promtool")
            .args(&args)
            .current_dir(deploy("prometheus"))
            .output()
            .expect("promtool");
        assert!(
            out.status.success(),
            "promtool {args:?} failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
