//! Lambda over REST-JSON: one arm per operation, typed input → Service method → typed
//! output. No rule of functions or mappings is here; they are the Service's
//! (`loft_core::service::functions`).

pub mod types;

use loft_core::functions::{FunctionConfig, FunctionTarget};
use loft_core::service::{MappingInput, MappingView};
use loft_core::{Error, ErrorCode, Result, Service};

use super::Context;
use types::*;

fn patterns(f: Option<FilterCriteria>) -> Option<Vec<String>> {
    f.map(|c| c.filters.into_iter().map(|f| f.pattern).collect())
}

/// The [`MappingInput`] of a Create- or UpdateEventSourceMapping request body `r` (the
/// two bodies have the same members; Update's EventSourceArn is refused by the Service):
/// the members as they came, FilterCriteria as its patterns' text.
macro_rules! mapping_in {
    ($r:expr) => {{
        let r = $r;
        MappingInput {
            function_name: r.function_name,
            event_source_arn: r.event_source_arn,
            enabled: r.enabled,
            batch_size: r.batch_size,
            maximum_batching_window_seconds: r.maximum_batching_window_in_seconds,
            function_response_types: r.function_response_types,
            filter_patterns: patterns(r.filter_criteria),
            maximum_concurrency: r.scaling_config.map(|s| s.maximum_concurrency),
        }
    }};
}

fn max_items(v: Option<&str>) -> Result<Option<i64>> {
    v.map(|s| {
        s.parse::<i64>().map_err(|_| {
            Error::new(
                ErrorCode::LambdaInvalidParameterValue,
                format!("MaxItems must be a number, not {s:?}"),
            )
        })
    })
    .transpose()
}

fn mapping_out(v: MappingView) -> EventSourceMappingConfiguration {
    let r = v.record;
    EventSourceMappingConfiguration {
        uuid: r.uuid,
        batch_size: r.batch_size,
        maximum_batching_window_in_seconds: r.maximum_batching_window_seconds,
        event_source_arn: r.event_source_arn,
        filter_criteria: (!r.filter_patterns.is_empty()).then(|| FilterCriteria {
            filters: r
                .filter_patterns
                .into_iter()
                .map(|pattern| Filter { pattern })
                .collect(),
        }),
        function_arn: r.function_arn,
        last_modified: r.last_modified_ms as f64 / 1000.0,
        state: v.state.to_owned(),
        state_transition_reason: "USER_INITIATED".into(),
        function_response_types: r.function_response_types,
        scaling_config: r.maximum_concurrency.map(|c| ScalingConfig {
            maximum_concurrency: Some(c),
        }),
        event_source_mapping_arn: v.arn,
    }
}

fn function_out(svc: &Service, f: &FunctionConfig) -> FunctionConfiguration {
    let description = match &f.target {
        FunctionTarget::InvokeEndpoint(u) => format!("invoked by Loft at {u} (Invoke API)"),
        FunctionTarget::Url(u) => format!("invoked by Loft at {u} (HTTP handler)"),
    };
    FunctionConfiguration {
        function_name: f.name.clone(),
        function_arn: svc.functions().function_arn(&f.name),
        timeout: f.timeout_seconds,
        version: "$LATEST".into(),
        state: "Active".into(),
        last_update_status: "Successful".into(),
        package_type: "Zip".into(),
        description,
    }
}

/// Runs one Lambda request against the service for the caller of `ctx`, once its access
/// ([`LambdaRequest::access`]) is checked ([`crate::aws::access::check`]). The mappings
/// are the caller's account's.
///
/// Errors: `AccessDeniedException` (403), the Service's (`InvalidParameterValueException`,
/// `ResourceNotFoundException`, `ResourceConflictException`), and
/// `InvalidParameterValueException` for a MaxItems or Marker that is not a number.
pub async fn call(svc: &Service, ctx: &Context, req: LambdaRequest) -> Result<LambdaResponse> {
    crate::aws::access::check(svc, ctx, req.access()).await?;
    let account = &*ctx.principal.account_id;
    Ok(match req {
        LambdaRequest::CreateEventSourceMapping(r) => {
            let v = svc
                .functions()
                .create_event_source_mapping(account, mapping_in!(r))
                .await?;
            LambdaResponse::EventSourceMapping(202, Box::new(mapping_out(v)))
        }
        LambdaRequest::GetEventSourceMapping(r) => {
            let v = svc
                .functions()
                .get_event_source_mapping(account, &r.uuid)
                .await?;
            LambdaResponse::EventSourceMapping(200, Box::new(mapping_out(v)))
        }
        LambdaRequest::ListEventSourceMappings(r) => {
            let (page, next) = svc
                .functions()
                .list_event_source_mappings(
                    account,
                    r.event_source_arn.as_deref(),
                    r.function_name.as_deref(),
                    r.marker.as_deref(),
                    max_items(r.max_items.as_deref())?,
                )
                .await?;
            LambdaResponse::EventSourceMappings(ListEventSourceMappingsResponse {
                next_marker: next,
                event_source_mappings: page.into_iter().map(mapping_out).collect(),
            })
        }
        LambdaRequest::UpdateEventSourceMapping(UpdateEventSourceMappingInput {
            uuid,
            body: r,
        }) => {
            let v = svc
                .functions()
                .update_event_source_mapping(account, &uuid, mapping_in!(r))
                .await?;
            LambdaResponse::EventSourceMapping(202, Box::new(mapping_out(v)))
        }
        LambdaRequest::DeleteEventSourceMapping(r) => {
            let v = svc
                .functions()
                .delete_event_source_mapping(account, &r.uuid)
                .await?;
            LambdaResponse::EventSourceMapping(202, Box::new(mapping_out(v)))
        }
        LambdaRequest::GetFunction(r) => {
            let f = svc.functions().own_function(account, &r.function_name)?;
            LambdaResponse::Function(Box::new(GetFunctionResponse {
                configuration: function_out(svc, f),
                code: FunctionCodeLocation {
                    repository_type: "Loft".into(),
                },
            }))
        }
        LambdaRequest::ListFunctions(r) => {
            let all = svc.functions().own_functions(account);
            let start: usize = match r.marker.as_deref() {
                Some(m) => m.parse().map_err(|_| {
                    Error::new(ErrorCode::LambdaInvalidParameterValue, "Invalid Marker")
                })?,
                None => 0,
            };
            let max = max_items(r.max_items.as_deref())?.unwrap_or(50);
            if !(1..=10_000).contains(&max) {
                return Err(Error::new(
                    ErrorCode::LambdaInvalidParameterValue,
                    "MaxItems must be between 1 and 10000",
                ));
            }
            let end = (start + max as usize).min(all.len());
            LambdaResponse::Functions(ListFunctionsResponse {
                next_marker: (end < all.len()).then(|| end.to_string()),
                functions: all
                    .iter()
                    .skip(start)
                    .take(end.saturating_sub(start))
                    .map(|f| function_out(svc, f))
                    .collect(),
            })
        }
    })
}
