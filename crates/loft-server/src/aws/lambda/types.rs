//! Lambda's operations that Loft answers, as the botocore model `lambda/2015-03-31` shapes
//! them (REST-JSON: members in PascalCase, `UUID` and `FunctionName` in the path, list
//! filters in the query string, timestamps as epoch seconds): the event-source-mapping
//! operations for SQS sources, GetFunction and ListFunctions for configured functions.
//! Members Loft does not use for SQS sources (Kafka, streams, destinations) are ignored
//! on input and left out of output.

use serde::{Deserialize, Serialize};

/// FilterCriteria: up to 5 filters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct FilterCriteria {
    /// Filters.
    #[serde(default)]
    pub filters: Vec<Filter>,
}

/// Filter: one event pattern.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Filter {
    /// Pattern: the event pattern, JSON text (0..=4096 characters).
    #[serde(default)]
    pub pattern: String,
}

/// ScalingConfig.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ScalingConfig {
    /// MaximumConcurrency (2..=1000).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub maximum_concurrency: Option<i64>,
}

/// CreateEventSourceMappingRequest (body); FunctionName is required.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct CreateEventSourceMappingRequest {
    /// EventSourceArn.
    pub event_source_arn: Option<String>,
    /// FunctionName (required; 1..=256).
    pub function_name: Option<String>,
    /// Enabled.
    pub enabled: Option<bool>,
    /// BatchSize (1..=10000).
    pub batch_size: Option<i64>,
    /// FilterCriteria.
    pub filter_criteria: Option<FilterCriteria>,
    /// MaximumBatchingWindowInSeconds (0..=300).
    pub maximum_batching_window_in_seconds: Option<i64>,
    /// FunctionResponseTypes.
    pub function_response_types: Option<Vec<String>>,
    /// ScalingConfig.
    pub scaling_config: Option<ScalingConfig>,
}

/// UpdateEventSourceMappingRequest (body; `UUID` is in the path). EventSourceArn is not a
/// member of the model's request; a client that sends one anyway is refused.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct UpdateEventSourceMappingRequest {
    /// FunctionName.
    pub function_name: Option<String>,
    /// Enabled.
    pub enabled: Option<bool>,
    /// BatchSize.
    pub batch_size: Option<i64>,
    /// FilterCriteria.
    pub filter_criteria: Option<FilterCriteria>,
    /// MaximumBatchingWindowInSeconds.
    pub maximum_batching_window_in_seconds: Option<i64>,
    /// FunctionResponseTypes.
    pub function_response_types: Option<Vec<String>>,
    /// ScalingConfig.
    pub scaling_config: Option<ScalingConfig>,
    /// Not in the model: refused when present.
    pub event_source_arn: Option<String>,
}

/// ListEventSourceMappingsRequest (query string).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct ListEventSourceMappingsRequest {
    /// EventSourceArn.
    #[serde(rename = "EventSourceArn")]
    pub event_source_arn: Option<String>,
    /// FunctionName.
    #[serde(rename = "FunctionName")]
    pub function_name: Option<String>,
    /// Marker.
    #[serde(rename = "Marker")]
    pub marker: Option<String>,
    /// MaxItems (1..=10000), as text in the query.
    #[serde(rename = "MaxItems")]
    pub max_items: Option<String>,
}

/// ListFunctionsRequest (query string).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct ListFunctionsRequest {
    /// Marker.
    #[serde(rename = "Marker")]
    pub marker: Option<String>,
    /// MaxItems (1..=10000), as text in the query.
    #[serde(rename = "MaxItems")]
    pub max_items: Option<String>,
}

/// EventSourceMappingConfiguration.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct EventSourceMappingConfiguration {
    /// UUID.
    #[serde(rename = "UUID")]
    pub uuid: String,
    /// BatchSize.
    pub batch_size: i64,
    /// MaximumBatchingWindowInSeconds.
    pub maximum_batching_window_in_seconds: i64,
    /// EventSourceArn.
    pub event_source_arn: String,
    /// FilterCriteria, when the mapping has filters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filter_criteria: Option<FilterCriteria>,
    /// FunctionArn.
    pub function_arn: String,
    /// LastModified: epoch seconds.
    pub last_modified: f64,
    /// State: Creating, Enabled, Disabled, Updating, Deleting.
    pub state: String,
    /// StateTransitionReason: `USER_INITIATED`.
    pub state_transition_reason: String,
    /// FunctionResponseTypes.
    pub function_response_types: Vec<String>,
    /// ScalingConfig, when set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scaling_config: Option<ScalingConfig>,
    /// EventSourceMappingArn.
    pub event_source_mapping_arn: String,
}

/// ListEventSourceMappingsResponse.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct ListEventSourceMappingsResponse {
    /// NextMarker, when more follow.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_marker: Option<String>,
    /// EventSourceMappings.
    pub event_source_mappings: Vec<EventSourceMappingConfiguration>,
}

/// FunctionConfiguration: what Loft knows of a configured function.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct FunctionConfiguration {
    /// FunctionName.
    pub function_name: String,
    /// FunctionArn.
    pub function_arn: String,
    /// Timeout, seconds.
    pub timeout: u64,
    /// Version: `$LATEST` (Loft's functions have one version).
    pub version: String,
    /// State: `Active`.
    pub state: String,
    /// LastUpdateStatus: `Successful`.
    pub last_update_status: String,
    /// PackageType: `Zip` (the model's enum has no value for "elsewhere").
    pub package_type: String,
    /// Description: where Loft invokes it.
    pub description: String,
}

/// FunctionCodeLocation: where the code is (Loft does not hold it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct FunctionCodeLocation {
    /// RepositoryType: `Loft` (the function runs at its configured host).
    pub repository_type: String,
}

/// GetFunctionResponse.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct GetFunctionResponse {
    /// Configuration.
    pub configuration: FunctionConfiguration,
    /// Code.
    pub code: FunctionCodeLocation,
}

/// ListFunctionsResponse.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct ListFunctionsResponse {
    /// NextMarker, when more follow.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_marker: Option<String>,
    /// Functions.
    pub functions: Vec<FunctionConfiguration>,
}

/// GetEventSourceMappingRequest: the `UUID` in the path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GetEventSourceMappingRequest {
    /// UUID.
    pub uuid: String,
}

/// DeleteEventSourceMappingRequest: the `UUID` in the path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeleteEventSourceMappingRequest {
    /// UUID.
    pub uuid: String,
}

/// UpdateEventSourceMappingRequest with the `UUID` of its path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UpdateEventSourceMappingInput {
    /// UUID (path).
    pub uuid: String,
    /// The body.
    pub body: UpdateEventSourceMappingRequest,
}

/// GetFunctionRequest: the `FunctionName` in the path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GetFunctionRequest {
    /// FunctionName: a name or an ARN.
    pub function_name: String,
}

/// A decoded Lambda request: one variant per operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LambdaRequest {
    /// POST /2015-03-31/event-source-mappings.
    CreateEventSourceMapping(CreateEventSourceMappingRequest),
    /// GET /2015-03-31/event-source-mappings/{UUID}.
    GetEventSourceMapping(GetEventSourceMappingRequest),
    /// GET /2015-03-31/event-source-mappings.
    ListEventSourceMappings(ListEventSourceMappingsRequest),
    /// PUT /2015-03-31/event-source-mappings/{UUID}.
    UpdateEventSourceMapping(UpdateEventSourceMappingInput),
    /// DELETE /2015-03-31/event-source-mappings/{UUID}.
    DeleteEventSourceMapping(DeleteEventSourceMappingRequest),
    /// GET /2015-03-31/functions/{FunctionName}.
    GetFunction(GetFunctionRequest),
    /// GET /2015-03-31/functions.
    ListFunctions(ListFunctionsRequest),
}

// Each operation's IAM action and resource, as the Service Authorization Reference's
// "Actions, resources, and condition keys for AWS Lambda" lists them: the mapping
// operations on the `eventSourceMapping` resource (Create and List on `*`: the account),
// GetFunction on the `function` resource, ListFunctions on `*`.
crate::aws::access::accesses! {
    LambdaRequest {
        CreateEventSourceMapping, lambda:CreateEventSourceMapping on MappingSource(event_source_arn),
        GetEventSourceMapping, lambda:GetEventSourceMapping on Mapping(uuid),
        ListEventSourceMappings, lambda:ListEventSourceMappings on Account,
        UpdateEventSourceMapping, lambda:UpdateEventSourceMapping on Mapping(uuid),
        DeleteEventSourceMapping, lambda:DeleteEventSourceMapping on Mapping(uuid),
        GetFunction, lambda:GetFunction on Function(function_name),
        ListFunctions, lambda:ListFunctions on Account,
    }
}

impl LambdaRequest {
    /// The operation's name (the metric label).
    pub fn operation(&self) -> &'static str {
        match self {
            LambdaRequest::CreateEventSourceMapping(_) => "CreateEventSourceMapping",
            LambdaRequest::GetEventSourceMapping(_) => "GetEventSourceMapping",
            LambdaRequest::ListEventSourceMappings(_) => "ListEventSourceMappings",
            LambdaRequest::UpdateEventSourceMapping(_) => "UpdateEventSourceMapping",
            LambdaRequest::DeleteEventSourceMapping(_) => "DeleteEventSourceMapping",
            LambdaRequest::GetFunction(_) => "GetFunction",
            LambdaRequest::ListFunctions(_) => "ListFunctions",
        }
    }
}

/// A Lambda response: one variant per output shape, with the model's status code.
#[derive(Debug, Clone, PartialEq)]
pub enum LambdaResponse {
    /// EventSourceMappingConfiguration, with 200 (Get) or 202 (Create, Update, Delete).
    EventSourceMapping(u16, Box<EventSourceMappingConfiguration>),
    /// ListEventSourceMappingsResponse.
    EventSourceMappings(ListEventSourceMappingsResponse),
    /// GetFunctionResponse.
    Function(Box<GetFunctionResponse>),
    /// ListFunctionsResponse.
    Functions(ListFunctionsResponse),
}
