//! What a web page sends an open Loft uninvited (`loft_server::browser`): a form or
//! `text/plain` POST from a page of another site (browsers send those without a
//! preflight), and a page whose own name was re-pointed at 127.0.0.1 (DNS rebinding).
//! A fresh user found both driving the default open Loft: CreateQueue, the seeds' send,
//! `/_loft/reset`. Each is refused 403 before any route and changes nothing; the same
//! request from a program (no `Origin`, no `Sec-Fetch-Site`), from Loft's own pages and
//! from an allowed origin is answered.

use crate::harness::{http, Loft};

/// Posts `body` (a `content_type` body) to `path` with `headers`; the status and the body.
async fn post(
    loft: &Loft,
    path: &str,
    content_type: &str,
    body: &str,
    headers: &[(&str, &str)],
) -> (u16, String) {
    let mut req = http()
        .post(format!("{}{path}", loft.url))
        .header("content-type", content_type)
        .body(body.to_owned());
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = req.send().await.expect("request");
    let status = resp.status().as_u16();
    (status, resp.text().await.unwrap_or_default())
}

/// The names ListQueues (Query, no browser headers) gives.
async fn queue_names(loft: &Loft) -> Vec<String> {
    let (status, body) = post(
        loft,
        "/",
        "application/x-www-form-urlencoded",
        "Action=ListQueues",
        &[],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    body.split("<QueueUrl>")
        .skip(1)
        .filter_map(|s| s.split("</QueueUrl>").next())
        .map(|u| u.rsplit('/').next().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn pages_of_other_sites_and_rebound_names_cannot_drive_an_open_loft() {
    let loft = Loft::start(&[], &[]);
    let port = loft.url.rsplit(':').next().unwrap().to_owned();
    let form = "application/x-www-form-urlencoded";
    let create = |name: &str| format!("Action=CreateQueue&QueueName={name}");

    // Another site's form post, and a text/plain one to the seeds' API.
    let evil = [("origin", "http://evil.example")];
    let (status, body) = post(&loft, "/", form, &create("from-evil"), &evil).await;
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("cors_allowed_origins"), "{body}");
    let (status, _) = post(
        &loft,
        "/queues/from-evil/messages",
        "text/plain",
        "x",
        &evil,
    )
    .await;
    assert_eq!(status, 403);
    // A local development server's page (another port) is another origin too.
    let dev = [("origin", "http://localhost:3000")];
    assert_eq!(
        post(&loft, "/", form, &create("from-dev"), &dev).await.0,
        403
    );
    // DNS rebinding: same-origin to the browser, but under a name that is not Loft's.
    let rebound = format!("rebound.evil.example:{port}");
    let origin = format!("http://{rebound}");
    let rebinding = [("host", rebound.as_str()), ("origin", origin.as_str())];
    assert_eq!(
        post(&loft, "/", form, &create("rebound"), &rebinding)
            .await
            .0,
        403
    );
    let navigation = [
        ("host", rebound.as_str()),
        ("sec-fetch-site", "same-origin"),
    ];
    assert_eq!(
        post(&loft, "/_loft/reset", form, "", &navigation).await.0,
        403
    );
    assert!(queue_names(&loft).await.is_empty(), "nothing was created");

    // A cross-site GET (an `<img>`, a link) carries no Origin, only Sec-Fetch-Site: a
    // second tryout deleted a queue and subscribed an outside URL that way.
    assert_eq!(post(&loft, "/", form, &create("victim"), &[]).await.0, 200);
    let get = |path: String, headers: &'static [(&'static str, &'static str)]| {
        let url = format!("{}{path}", loft.url);
        async move {
            let mut req = http().get(url);
            for (k, v) in headers {
                req = req.header(*k, *v);
            }
            req.send().await.expect("request").status().as_u16()
        }
    };
    const IMG: &[(&str, &str)] = &[
        ("sec-fetch-site", "cross-site"),
        ("sec-fetch-mode", "no-cors"),
        ("sec-fetch-dest", "image"),
    ];
    const LINK: &[(&str, &str)] = &[
        ("sec-fetch-site", "same-site"),
        ("sec-fetch-mode", "navigate"),
        ("sec-fetch-dest", "document"),
    ];
    let delete = "/000000000000/victim?Action=DeleteQueue".to_owned();
    assert_eq!(get(delete.clone(), IMG).await, 403);
    assert_eq!(get(delete, LINK).await, 403);
    assert_eq!(get("/queues/victim/messages".into(), IMG).await, 403);
    assert_eq!(queue_names(&loft).await, ["victim"], "the queue survives");
    // A link from elsewhere to the console's page opens it.
    assert_eq!(get("/console".into(), LINK).await, 200);
    assert_eq!(
        post(&loft, "/", form, "Action=DeleteQueue&QueueUrl=x", &[])
            .await
            .0,
        400,
        "a program is answered as before"
    );

    // A program, and Loft's own page under 127.0.0.1 or localhost, are answered.
    assert_eq!(post(&loft, "/", form, &create("program"), &[]).await.0, 200);
    let own = format!("http://127.0.0.1:{port}");
    assert_eq!(
        post(
            &loft,
            "/",
            form,
            &create("own-page"),
            &[("origin", own.as_str())]
        )
        .await
        .0,
        200
    );
    let localhost = format!("localhost:{port}");
    let own = format!("http://{localhost}");
    let page = [("host", localhost.as_str()), ("origin", own.as_str())];
    assert_eq!(
        post(&loft, "/", form, &create("localhost-page"), &page)
            .await
            .0,
        200
    );
    assert_eq!(
        queue_names(&loft).await,
        ["localhost-page", "own-page", "program", "victim"]
    );
}

/// With `--cors-allowed-origin`, that origin's pages are answered; others still are not.
#[tokio::test]
async fn an_allowed_origins_pages_are_answered() {
    let loft = Loft::start(&["--cors-allowed-origin", "http://localhost:3000"], &[]);
    let form = "application/x-www-form-urlencoded";
    let body = "Action=CreateQueue&QueueName=from-app";
    let (status, out) = post(
        &loft,
        "/",
        form,
        body,
        &[("origin", "http://localhost:3000")],
    )
    .await;
    assert_eq!(status, 200, "{out}");
    let (status, _) = post(&loft, "/", form, body, &[("origin", "http://evil.example")]).await;
    assert_eq!(status, 403);
}
