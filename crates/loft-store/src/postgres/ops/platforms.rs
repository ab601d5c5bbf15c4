//! Mobile push platform applications and endpoints, SMS attributes.

use super::*;

// ----- mobile push platforms

pub async fn create_platform_application<C: GenericClient>(
    c: &C,
    arn: &str,
    attributes: &Map,
) -> Result<(), Error> {
    execute(
        c,
        "INSERT INTO platform_applications (arn, attributes) VALUES ($1, $2) \
         ON CONFLICT (arn) DO NOTHING",
        &[&arn, &to_json(attributes)],
    )
    .await
    .map(drop)
}

/// One statement: the insert (skipped on a token the application has already, the
/// unique index deciding between two concurrent creates) and the token's endpoint.
pub async fn create_platform_endpoint<C: GenericClient>(
    c: &C,
    application_arn: &str,
    arn: &str,
    token: &str,
    attributes: &Map,
) -> Result<Option<Option<String>>, Error> {
    let row = query_one(
        c,
        "WITH app AS (SELECT 1 FROM platform_applications WHERE arn = $2), \
         ins AS (INSERT INTO platform_endpoints (arn, application_arn, token, attributes) \
           SELECT $1, $2, $3, $4 FROM app ON CONFLICT DO NOTHING RETURNING arn) \
         SELECT EXISTS (SELECT 1 FROM app), \
                COALESCE((SELECT arn FROM ins), (SELECT arn FROM platform_endpoints \
                  WHERE application_arn = $2 AND token = $3))",
        &[&arn, &application_arn, &token, &to_json(attributes)],
    )
    .await?;
    let exists: bool = row.get(0);
    let found: Option<String> = row.get(1);
    Ok(match (exists, found) {
        (false, _) => Some(None),
        (true, Some(arn)) => Some(Some(arn)),
        // A concurrent create of the same token, not committed when this statement
        // began: try again.
        (true, None) => None,
    })
}

fn platform_row(r: &Row) -> PlatformRecord {
    PlatformRecord {
        arn: r.get(0),
        attributes: from_json(r.get(1)),
    }
}

pub async fn get_platform<C: GenericClient>(
    c: &C,
    arn: &str,
) -> Result<Option<PlatformRecord>, Error> {
    Ok(query_opt(
        c,
        "SELECT arn, attributes FROM platform_applications WHERE arn = $1 \
         UNION ALL SELECT arn, attributes FROM platform_endpoints WHERE arn = $1",
        &[&arn],
    )
    .await?
    .as_ref()
    .map(platform_row))
}

pub async fn list_platform_applications<C: GenericClient>(
    c: &C,
) -> Result<Vec<PlatformRecord>, Error> {
    Ok(query(
        c,
        "SELECT arn, attributes FROM platform_applications ORDER BY arn",
        &[],
    )
    .await?
    .iter()
    .map(platform_row)
    .collect())
}

pub async fn list_platform_endpoints<C: GenericClient>(
    c: &C,
    application_arn: &str,
) -> Result<Vec<PlatformRecord>, Error> {
    Ok(query(
        c,
        "SELECT arn, attributes FROM platform_endpoints WHERE application_arn = $1 ORDER BY arn",
        &[&application_arn],
    )
    .await?
    .iter()
    .map(platform_row)
    .collect())
}

/// Inside the caller's transaction: the row is locked while its attributes merge, so two
/// concurrent updates both land.
pub async fn update_platform_attributes_in<C: GenericClient>(
    tx: &C,
    arn: &str,
    attributes: &Map,
    token: Option<&str>,
) -> Result<bool, Error> {
    let current = query_opt(
        tx,
        "SELECT attributes FROM platform_applications WHERE arn = $1 FOR UPDATE",
        &[&arn],
    )
    .await?;
    let (table, current) = match current {
        Some(row) => ("platform_applications", row),
        None => match query_opt(
            tx,
            "SELECT attributes FROM platform_endpoints WHERE arn = $1 FOR UPDATE",
            &[&arn],
        )
        .await?
        {
            Some(row) => ("platform_endpoints", row),
            None => return Ok(false),
        },
    };
    let mut merged = from_json(current.get(0));
    merged.extend(attributes.clone());
    let json = to_json(&merged);
    if table == "platform_applications" {
        execute(
            tx,
            "UPDATE platform_applications SET attributes = $2 WHERE arn = $1",
            &[&arn, &json],
        )
        .await?;
    } else {
        execute(
            tx,
            "UPDATE platform_endpoints SET attributes = $2, token = COALESCE($3, token) \
             WHERE arn = $1",
            &[&arn, &json, &token],
        )
        .await?;
    }
    Ok(true)
}

pub async fn sms_attributes<C: GenericClient>(
    c: &C,
    scope: &str,
) -> Result<BTreeMap<String, String>, Error> {
    let rows = c
        .query(
            "SELECT name, value FROM sms_attributes WHERE scope = $1",
            &[&scope],
        )
        .await?;
    Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
}

pub async fn set_sms_attributes<C: GenericClient>(
    c: &C,
    scope: &str,
    attributes: &BTreeMap<String, String>,
) -> Result<(), Error> {
    for (name, value) in attributes {
        execute(
            c,
            "INSERT INTO sms_attributes (scope, name, value) VALUES ($1, $2, $3) \
             ON CONFLICT (scope, name) DO UPDATE SET value = excluded.value",
            &[&scope, name, value],
        )
        .await?;
    }
    Ok(())
}

pub async fn sms_sandbox_numbers<C: GenericClient>(
    c: &C,
    scope: &str,
) -> Result<Vec<SmsSandboxNumber>, Error> {
    let stmt = c
        .prepare_cached(
            "SELECT phone_number, verified, one_time_password, created_at \
             FROM sms_sandbox_numbers WHERE scope = $1 ORDER BY phone_number",
        )
        .await?;
    Ok(c.query(&stmt, &[&scope])
        .await?
        .iter()
        .map(|r| SmsSandboxNumber {
            phone_number: r.get(0),
            verified: r.get(1),
            one_time_password: r.get(2),
            created_at_ms: r.get(3),
        })
        .collect())
}

pub async fn put_sms_sandbox_number<C: GenericClient>(
    c: &C,
    scope: &str,
    n: &SmsSandboxNumber,
) -> Result<(), Error> {
    execute(
        c,
        "INSERT INTO sms_sandbox_numbers \
         (scope, phone_number, verified, one_time_password, created_at) \
         VALUES ($1, $2, $3, $4, $5) ON CONFLICT (scope, phone_number) DO UPDATE SET \
         verified = excluded.verified, one_time_password = excluded.one_time_password, \
         created_at = excluded.created_at",
        &[
            &scope,
            &n.phone_number,
            &n.verified,
            &n.one_time_password,
            &n.created_at_ms,
        ],
    )
    .await
    .map(drop)
}

pub async fn delete_sms_sandbox_number<C: GenericClient>(
    c: &C,
    scope: &str,
    phone_number: &str,
) -> Result<bool, Error> {
    Ok(execute(
        c,
        "DELETE FROM sms_sandbox_numbers WHERE scope = $1 AND phone_number = $2",
        &[&scope, &phone_number],
    )
    .await?
        > 0)
}

pub async fn delete_platform<C: GenericClient>(c: &C, arn: &str) -> Result<(), Error> {
    execute(
        c,
        "WITH e AS (DELETE FROM platform_endpoints WHERE arn = $1 OR application_arn = $1) \
         DELETE FROM platform_applications WHERE arn = $1",
        &[&arn],
    )
    .await
    .map(drop)
}
