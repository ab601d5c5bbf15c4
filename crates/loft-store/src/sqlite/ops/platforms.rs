//! Mobile push platform applications and endpoints, SMS attributes and sandbox numbers.

use super::*;

// ----- mobile push platforms

pub fn create_platform_application(
    c: &Connection,
    arn: &str,
    attributes: &Map,
) -> rusqlite::Result<()> {
    c.prepare_cached(
        "INSERT INTO platform_applications (arn, attributes) VALUES (?1, ?2) \
         ON CONFLICT (arn) DO NOTHING",
    )?
    .execute(params![arn, to_json(attributes)])?;
    Ok(())
}

pub fn create_platform_endpoint(
    c: &Connection,
    application_arn: &str,
    arn: &str,
    token: &str,
    attributes: &Map,
) -> rusqlite::Result<Option<String>> {
    let app: Option<i64> = c
        .prepare_cached("SELECT 1 FROM platform_applications WHERE arn = ?1")?
        .query_row([application_arn], |r| r.get(0))
        .optional()?;
    if app.is_none() {
        return Ok(None);
    }
    c.prepare_cached(
        "INSERT INTO platform_endpoints (arn, application_arn, token, attributes) \
         VALUES (?1, ?2, ?3, ?4) ON CONFLICT DO NOTHING",
    )?
    .execute(params![arn, application_arn, token, to_json(attributes)])?;
    c.prepare_cached(
        "SELECT arn FROM platform_endpoints WHERE application_arn = ?1 AND token = ?2",
    )?
    .query_row(params![application_arn, token], |r| r.get(0))
    .optional()
}

fn platform_row(r: &Row<'_>) -> rusqlite::Result<PlatformRecord> {
    Ok(PlatformRecord {
        arn: r.get(0)?,
        attributes: from_json(&r.get::<_, String>(1)?),
    })
}

pub fn sms_attributes(c: &Connection, scope: &str) -> rusqlite::Result<BTreeMap<String, String>> {
    let mut stmt = c.prepare_cached("SELECT name, value FROM sms_attributes WHERE scope = ?1")?;
    let rows = stmt.query_map([scope], |r| Ok((r.get(0)?, r.get(1)?)))?;
    rows.collect()
}

pub fn set_sms_attributes(
    c: &Connection,
    scope: &str,
    attributes: &BTreeMap<String, String>,
) -> rusqlite::Result<()> {
    // The writer's transaction holds every job: all of them land or none.
    let mut stmt = c.prepare_cached(
        "INSERT INTO sms_attributes (scope, name, value) VALUES (?1, ?2, ?3) \
         ON CONFLICT (scope, name) DO UPDATE SET value = excluded.value",
    )?;
    for (name, value) in attributes {
        stmt.execute(rusqlite::params![scope, name, value])?;
    }
    Ok(())
}

pub fn sms_sandbox_numbers(c: &Connection, scope: &str) -> rusqlite::Result<Vec<SmsSandboxNumber>> {
    let mut stmt = c.prepare_cached(
        "SELECT phone_number, verified, one_time_password, created_at \
         FROM sms_sandbox_numbers WHERE scope = ?1 ORDER BY phone_number",
    )?;
    let rows = stmt.query_map([scope], |r| {
        Ok(SmsSandboxNumber {
            phone_number: r.get(0)?,
            verified: r.get(1)?,
            one_time_password: r.get(2)?,
            created_at_ms: r.get(3)?,
        })
    })?;
    rows.collect()
}

pub fn put_sms_sandbox_number(
    c: &Connection,
    scope: &str,
    n: &SmsSandboxNumber,
) -> rusqlite::Result<()> {
    c.prepare_cached(
        "INSERT INTO sms_sandbox_numbers \
         (scope, phone_number, verified, one_time_password, created_at) \
         VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (scope, phone_number) DO UPDATE SET \
         verified = excluded.verified, one_time_password = excluded.one_time_password, \
         created_at = excluded.created_at",
    )?
    .execute(params![
        scope,
        n.phone_number,
        n.verified,
        n.one_time_password,
        n.created_at_ms
    ])?;
    Ok(())
}

pub fn delete_sms_sandbox_number(
    c: &Connection,
    scope: &str,
    phone_number: &str,
) -> rusqlite::Result<bool> {
    Ok(
        c.prepare_cached("DELETE FROM sms_sandbox_numbers WHERE scope = ?1 AND phone_number = ?2")?
            .execute([scope, phone_number])?
            > 0,
    )
}

pub fn get_platform(c: &Connection, arn: &str) -> rusqlite::Result<Option<PlatformRecord>> {
    c.prepare_cached(
        "SELECT arn, attributes FROM platform_applications WHERE arn = ?1 \
         UNION ALL SELECT arn, attributes FROM platform_endpoints WHERE arn = ?1",
    )?
    .query_row([arn], platform_row)
    .optional()
}

pub fn list_platform_applications(c: &Connection) -> rusqlite::Result<Vec<PlatformRecord>> {
    let mut stmt =
        c.prepare_cached("SELECT arn, attributes FROM platform_applications ORDER BY arn")?;
    let rows = stmt.query_map([], platform_row)?;
    rows.collect()
}

pub fn list_platform_endpoints(
    c: &Connection,
    application_arn: &str,
) -> rusqlite::Result<Vec<PlatformRecord>> {
    let mut stmt = c.prepare_cached(
        "SELECT arn, attributes FROM platform_endpoints WHERE application_arn = ?1 ORDER BY arn",
    )?;
    let rows = stmt.query_map([application_arn], platform_row)?;
    rows.collect()
}

pub fn update_platform_attributes(
    c: &Connection,
    arn: &str,
    attributes: &Map,
    token: Option<&str>,
) -> rusqlite::Result<bool> {
    let Some(mut current) = get_platform(c, arn)? else {
        return Ok(false);
    };
    current.attributes.extend(attributes.clone());
    let json = to_json(&current.attributes);
    c.prepare_cached("UPDATE platform_applications SET attributes = ?2 WHERE arn = ?1")?
        .execute(params![arn, json])?;
    c.prepare_cached(
        "UPDATE platform_endpoints SET attributes = ?2, token = COALESCE(?3, token) \
         WHERE arn = ?1",
    )?
    .execute(params![arn, json, token])?;
    Ok(true)
}

pub fn delete_platform(c: &Connection, arn: &str) -> rusqlite::Result<()> {
    c.prepare_cached("DELETE FROM platform_endpoints WHERE arn = ?1 OR application_arn = ?1")?
        .execute([arn])?;
    c.prepare_cached("DELETE FROM platform_applications WHERE arn = ?1")?
        .execute([arn])?;
    Ok(())
}
