//! The SNS operations' inputs and outputs, named and shaped as the botocore model
//! `sns/2010-03-31` declares them (lists as `Name.member.N`, maps as `Name.entry.N.key` /
//! `.value`, message attributes as `.Name` / `.Value`). A member the model requires is a
//! plain field, an optional one an `Option`, so a request without a required member is
//! refused as SNS refuses it ([`super::super::shape::Wire::missing`]).
//!
//! One deviation: `PublishBatchRequestEntries` is read as optional, so that a batch without
//! entries gets SNS's `EmptyBatchRequest` from the Service.
//!
//! [`SnsRequest`] and [`SnsResponse`] hold one variant per operation Loft implements;
//! [`OPERATIONS`] lists them with their members for tests and tools.

use super::super::shape::{operations, structure, Blob, LowerKeyValue, Map, NameValue, NoOutput};

/// A string map with `key` / `value` entries (`MapStringToString`, `TopicAttributesMap`,
/// `SubscriptionAttributesMap`).
pub type MapStringToString = Map<String, LowerKeyValue>;
/// Message attributes with `Name` / `Value` entries (`MessageAttributeMap`).
pub type MessageAttributeMap = Map<MessageAttributeValue, NameValue>;

structure! {
    /// A message attribute's value.
    pub struct MessageAttributeValue {
        /// `String`, `String.Array`, `Number` or `Binary`.
        DataType: data_type: String,
        /// The value of String, String.Array and Number attributes.
        StringValue: string_value: Option<String>,
        /// The value of Binary attributes.
        BinaryValue: binary_value: Option<Blob>,
    }

    /// A tag.
    pub struct Tag {
        /// Its key.
        Key: key: String,
        /// Its value.
        Value: value: String,
    }

    /// `AddPermission` input.
    pub struct AddPermissionInput {
        /// The topic.
        TopicArn: topic_arn: String,
        /// The statement's label.
        Label: label: String,
        /// Accounts granted.
        AWSAccountId: aws_account_id: Vec<String>,
        /// Actions granted.
        ActionName: action_name: Vec<String>,
    }

    /// `CheckIfPhoneNumberIsOptedOut` input.
    pub struct CheckIfPhoneNumberIsOptedOutInput {
        /// The number.
        phoneNumber: phone_number: String,
    }
    /// `CheckIfPhoneNumberIsOptedOut` output.
    pub struct CheckIfPhoneNumberIsOptedOutResponse {
        /// Whether it is opted out.
        isOptedOut: is_opted_out: Option<bool>,
    }

    /// `ConfirmSubscription` input.
    pub struct ConfirmSubscriptionInput {
        /// The topic.
        TopicArn: topic_arn: String,
        /// The token SNS sent the endpoint.
        Token: token: String,
        /// Whether unsubscribing needs authentication (accepted, not enforced).
        AuthenticateOnUnsubscribe: authenticate_on_unsubscribe: Option<String>,
    }
    /// `ConfirmSubscription` output.
    pub struct ConfirmSubscriptionResponse {
        /// The confirmed subscription.
        SubscriptionArn: subscription_arn: Option<String>,
    }

    /// `CreatePlatformApplication` input.
    pub struct CreatePlatformApplicationInput {
        /// Its name.
        Name: name: String,
        /// `ADM`, `APNS`, `GCM`, ...
        Platform: platform: String,
        /// Its attributes (credentials, ...).
        Attributes: attributes: MapStringToString,
    }
    /// `CreatePlatformApplication` output.
    pub struct CreatePlatformApplicationResponse {
        /// The application's ARN.
        PlatformApplicationArn: platform_application_arn: Option<String>,
    }

    /// `CreatePlatformEndpoint` input.
    pub struct CreatePlatformEndpointInput {
        /// The application.
        PlatformApplicationArn: platform_application_arn: String,
        /// The device token.
        Token: token: String,
        /// Data of the caller's.
        CustomUserData: custom_user_data: Option<String>,
        /// Its attributes.
        Attributes: attributes: Option<MapStringToString>,
    }
    /// `CreatePlatformEndpoint` output.
    pub struct CreateEndpointResponse {
        /// The endpoint's ARN.
        EndpointArn: endpoint_arn: Option<String>,
    }

    /// `CreateTopic` input.
    pub struct CreateTopicInput {
        /// Its name.
        Name: name: String,
        /// Its attributes.
        Attributes: attributes: Option<MapStringToString>,
        /// Its tags.
        Tags: tags: Option<Vec<Tag>>,
        /// A data protection policy, kept as the attribute of that name.
        DataProtectionPolicy: data_protection_policy: Option<String>,
    }
    /// `CreateTopic` output.
    pub struct CreateTopicResponse {
        /// The topic's ARN.
        TopicArn: topic_arn: Option<String>,
    }

    /// `DeleteEndpoint` input.
    pub struct DeleteEndpointInput {
        /// The endpoint.
        EndpointArn: endpoint_arn: String,
    }

    /// `DeletePlatformApplication` input.
    pub struct DeletePlatformApplicationInput {
        /// The application.
        PlatformApplicationArn: platform_application_arn: String,
    }

    /// `DeleteTopic` input.
    pub struct DeleteTopicInput {
        /// The topic.
        TopicArn: topic_arn: String,
    }

    /// A platform endpoint.
    pub struct Endpoint {
        /// Its ARN.
        EndpointArn: endpoint_arn: Option<String>,
        /// Its attributes.
        Attributes: attributes: Option<MapStringToString>,
    }

    /// `GetEndpointAttributes` input.
    pub struct GetEndpointAttributesInput {
        /// The endpoint.
        EndpointArn: endpoint_arn: String,
    }
    /// `GetEndpointAttributes` output.
    pub struct GetEndpointAttributesResponse {
        /// Its attributes.
        Attributes: attributes: Option<MapStringToString>,
    }

    /// `GetPlatformApplicationAttributes` input.
    pub struct GetPlatformApplicationAttributesInput {
        /// The application.
        PlatformApplicationArn: platform_application_arn: String,
    }
    /// `GetPlatformApplicationAttributes` output.
    pub struct GetPlatformApplicationAttributesResponse {
        /// Its attributes.
        Attributes: attributes: Option<MapStringToString>,
    }

    /// `GetSMSAttributes` input.
    pub struct GetSMSAttributesInput {
        /// Names wanted; all when absent.
        attributes: attributes: Option<Vec<String>>,
    }
    /// `GetSMSAttributes` output.
    pub struct GetSMSAttributesResponse {
        /// The settings.
        attributes: attributes: Option<MapStringToString>,
    }

    /// `GetSMSSandboxAccountStatus` input.
    pub struct GetSMSSandboxAccountStatusInput {}
    /// `GetSMSSandboxAccountStatus` output.
    pub struct GetSMSSandboxAccountStatusResult {
        /// Whether the account is in the SMS sandbox.
        IsInSandbox: is_in_sandbox: bool,
    }

    /// `GetSubscriptionAttributes` input.
    pub struct GetSubscriptionAttributesInput {
        /// The subscription.
        SubscriptionArn: subscription_arn: String,
    }
    /// `GetSubscriptionAttributes` output.
    pub struct GetSubscriptionAttributesResponse {
        /// Its attributes.
        Attributes: attributes: Option<MapStringToString>,
    }

    /// `GetTopicAttributes` input.
    pub struct GetTopicAttributesInput {
        /// The topic.
        TopicArn: topic_arn: String,
    }
    /// `GetTopicAttributes` output.
    pub struct GetTopicAttributesResponse {
        /// Its attributes.
        Attributes: attributes: Option<MapStringToString>,
    }

    /// `ListEndpointsByPlatformApplication` input.
    pub struct ListEndpointsByPlatformApplicationInput {
        /// The application.
        PlatformApplicationArn: platform_application_arn: String,
        /// A page token.
        NextToken: next_token: Option<String>,
    }
    /// `ListEndpointsByPlatformApplication` output.
    pub struct ListEndpointsByPlatformApplicationResponse {
        /// The endpoints.
        Endpoints: endpoints: Vec<Endpoint>,
        /// The next page's token.
        NextToken: next_token: Option<String>,
    }

    /// `ListPhoneNumbersOptedOut` input.
    pub struct ListPhoneNumbersOptedOutInput {
        /// A page token.
        nextToken: next_token: Option<String>,
    }
    /// `ListPhoneNumbersOptedOut` output.
    pub struct ListPhoneNumbersOptedOutResponse {
        /// The numbers.
        phoneNumbers: phone_numbers: Vec<String>,
        /// The next page's token.
        nextToken: next_token: Option<String>,
    }

    /// A platform application.
    pub struct PlatformApplication {
        /// Its ARN.
        PlatformApplicationArn: platform_application_arn: Option<String>,
        /// Its attributes.
        Attributes: attributes: Option<MapStringToString>,
    }

    /// `ListPlatformApplications` input.
    pub struct ListPlatformApplicationsInput {
        /// A page token.
        NextToken: next_token: Option<String>,
    }
    /// `ListPlatformApplications` output.
    pub struct ListPlatformApplicationsResponse {
        /// The applications.
        PlatformApplications: platform_applications: Vec<PlatformApplication>,
        /// The next page's token.
        NextToken: next_token: Option<String>,
    }

    /// A subscription as the list operations show it.
    pub struct Subscription {
        /// Its ARN, or `PendingConfirmation`.
        SubscriptionArn: subscription_arn: Option<String>,
        /// The owning account.
        Owner: owner: Option<String>,
        /// Its protocol.
        Protocol: protocol: Option<String>,
        /// Its endpoint.
        Endpoint: endpoint: Option<String>,
        /// Its topic.
        TopicArn: topic_arn: Option<String>,
    }

    /// `ListSubscriptionsByTopic` input.
    pub struct ListSubscriptionsByTopicInput {
        /// The topic.
        TopicArn: topic_arn: String,
        /// A page token.
        NextToken: next_token: Option<String>,
    }
    /// `ListSubscriptionsByTopic` output.
    pub struct ListSubscriptionsByTopicResponse {
        /// The subscriptions.
        Subscriptions: subscriptions: Vec<Subscription>,
        /// The next page's token.
        NextToken: next_token: Option<String>,
    }

    /// `ListSubscriptions` input.
    pub struct ListSubscriptionsInput {
        /// A page token.
        NextToken: next_token: Option<String>,
    }
    /// `ListSubscriptions` output.
    pub struct ListSubscriptionsResponse {
        /// The subscriptions.
        Subscriptions: subscriptions: Vec<Subscription>,
        /// The next page's token.
        NextToken: next_token: Option<String>,
    }

    /// `GetDataProtectionPolicy` input.
    pub struct GetDataProtectionPolicyInput {
        /// The topic.
        ResourceArn: resource_arn: String,
    }
    /// `GetDataProtectionPolicy` output.
    pub struct GetDataProtectionPolicyResponse {
        /// The topic's policy, JSON; absent when it has none.
        DataProtectionPolicy: data_protection_policy: Option<String>,
    }

    /// `PutDataProtectionPolicy` input.
    pub struct PutDataProtectionPolicyInput {
        /// The topic.
        ResourceArn: resource_arn: String,
        /// The policy, JSON (an empty string removes it).
        DataProtectionPolicy: data_protection_policy: String,
    }

    /// `ListTagsForResource` input.
    pub struct ListTagsForResourceRequest {
        /// The topic.
        ResourceArn: resource_arn: String,
    }
    /// `ListTagsForResource` output.
    pub struct ListTagsForResourceResponse {
        /// Its tags.
        Tags: tags: Vec<Tag>,
    }

    /// A topic as ListTopics shows it.
    pub struct Topic {
        /// Its ARN.
        TopicArn: topic_arn: Option<String>,
    }

    /// `ListTopics` input.
    pub struct ListTopicsInput {
        /// A page token.
        NextToken: next_token: Option<String>,
    }
    /// `ListTopics` output.
    pub struct ListTopicsResponse {
        /// The topics.
        Topics: topics: Vec<Topic>,
        /// The next page's token.
        NextToken: next_token: Option<String>,
    }

    /// `CreateSMSSandboxPhoneNumber` input.
    pub struct CreateSMSSandboxPhoneNumberInput {
        /// The destination number.
        PhoneNumber: phone_number: String,
        /// The one-time password's language.
        LanguageCode: language_code: Option<String>,
    }
    /// `CreateSMSSandboxPhoneNumber` output.
    pub struct CreateSMSSandboxPhoneNumberResult {}

    /// `DeleteSMSSandboxPhoneNumber` input.
    pub struct DeleteSMSSandboxPhoneNumberInput {
        /// The destination number.
        PhoneNumber: phone_number: String,
    }
    /// `DeleteSMSSandboxPhoneNumber` output.
    pub struct DeleteSMSSandboxPhoneNumberResult {}

    /// An origination number (`PhoneNumberInformation`; Loft has none).
    pub struct PhoneNumberInformation {
        /// The number.
        PhoneNumber: phone_number: Option<String>,
        /// Its status.
        Status: status: Option<String>,
    }

    /// `ListOriginationNumbers` input.
    pub struct ListOriginationNumbersRequest {
        /// A page token.
        NextToken: next_token: Option<String>,
        /// The page's size, 1 to 30.
        MaxResults: max_results: Option<i64>,
    }
    /// `ListOriginationNumbers` output.
    pub struct ListOriginationNumbersResult {
        /// The next page's token.
        NextToken: next_token: Option<String>,
        /// The numbers.
        PhoneNumbers: phone_numbers: Vec<PhoneNumberInformation>,
    }

    /// A destination number of the SMS sandbox.
    pub struct SMSSandboxPhoneNumber {
        /// The number.
        PhoneNumber: phone_number: Option<String>,
        /// `Pending` or `Verified`.
        Status: status: Option<String>,
    }

    /// `ListSMSSandboxPhoneNumbers` input.
    pub struct ListSMSSandboxPhoneNumbersInput {
        /// A page token.
        NextToken: next_token: Option<String>,
        /// The page's size, 1 to 100.
        MaxResults: max_results: Option<i64>,
    }
    /// `ListSMSSandboxPhoneNumbers` output.
    pub struct ListSMSSandboxPhoneNumbersResult {
        /// The numbers.
        PhoneNumbers: phone_numbers: Vec<SMSSandboxPhoneNumber>,
        /// The next page's token.
        NextToken: next_token: Option<String>,
    }

    /// `VerifySMSSandboxPhoneNumber` input.
    pub struct VerifySMSSandboxPhoneNumberInput {
        /// The destination number.
        PhoneNumber: phone_number: String,
        /// The password CreateSMSSandboxPhoneNumber sent.
        OneTimePassword: one_time_password: String,
    }
    /// `VerifySMSSandboxPhoneNumber` output.
    pub struct VerifySMSSandboxPhoneNumberResult {}

    /// `OptInPhoneNumber` input.
    pub struct OptInPhoneNumberInput {
        /// The number.
        phoneNumber: phone_number: String,
    }
    /// `OptInPhoneNumber` output.
    pub struct OptInPhoneNumberResponse {}

    /// `Publish` input.
    pub struct PublishInput {
        /// The topic (or a platform endpoint).
        TopicArn: topic_arn: Option<String>,
        /// A topic or platform endpoint.
        TargetArn: target_arn: Option<String>,
        /// An SMS number.
        PhoneNumber: phone_number: Option<String>,
        /// The message.
        Message: message: String,
        /// The subject (email, the envelope).
        Subject: subject: Option<String>,
        /// `json` for one message per protocol.
        MessageStructure: message_structure: Option<String>,
        /// Message attributes.
        MessageAttributes: message_attributes: Option<MessageAttributeMap>,
        /// FIFO: deduplication id.
        MessageDeduplicationId: message_deduplication_id: Option<String>,
        /// FIFO: group id.
        MessageGroupId: message_group_id: Option<String>,
    }
    /// `Publish` output.
    pub struct PublishResponse {
        /// The message's id.
        MessageId: message_id: Option<String>,
        /// FIFO: its sequence number.
        SequenceNumber: sequence_number: Option<String>,
    }

    /// One `PublishBatch` entry.
    pub struct PublishBatchRequestEntry {
        /// The entry's id in the batch.
        Id: id: String,
        /// The message.
        Message: message: String,
        /// The subject.
        Subject: subject: Option<String>,
        /// `json` for one message per protocol.
        MessageStructure: message_structure: Option<String>,
        /// Message attributes.
        MessageAttributes: message_attributes: Option<MessageAttributeMap>,
        /// FIFO: deduplication id.
        MessageDeduplicationId: message_deduplication_id: Option<String>,
        /// FIFO: group id.
        MessageGroupId: message_group_id: Option<String>,
    }
    /// `PublishBatch` input.
    pub struct PublishBatchInput {
        /// The topic.
        TopicArn: topic_arn: String,
        /// The entries (required by the model; see the module doc).
        PublishBatchRequestEntries: publish_batch_request_entries: Option<Vec<PublishBatchRequestEntry>>,
    }
    /// A successful `PublishBatch` entry.
    pub struct PublishBatchResultEntry {
        /// The entry's id.
        Id: id: Option<String>,
        /// The message's id.
        MessageId: message_id: Option<String>,
        /// FIFO: its sequence number.
        SequenceNumber: sequence_number: Option<String>,
    }
    /// A failed batch entry.
    pub struct BatchResultErrorEntry {
        /// The entry's id.
        Id: id: String,
        /// The error's code.
        Code: code: String,
        /// The error's message.
        Message: message: Option<String>,
        /// Whether the caller is at fault.
        SenderFault: sender_fault: bool,
    }
    /// `PublishBatch` output.
    pub struct PublishBatchResponse {
        /// Entries that succeeded.
        Successful: successful: Vec<PublishBatchResultEntry>,
        /// Entries that failed.
        Failed: failed: Vec<BatchResultErrorEntry>,
    }

    /// `RemovePermission` input.
    pub struct RemovePermissionInput {
        /// The topic.
        TopicArn: topic_arn: String,
        /// The statement's label.
        Label: label: String,
    }

    /// `SetEndpointAttributes` input.
    pub struct SetEndpointAttributesInput {
        /// The endpoint.
        EndpointArn: endpoint_arn: String,
        /// Attributes to set.
        Attributes: attributes: MapStringToString,
    }

    /// `SetPlatformApplicationAttributes` input.
    pub struct SetPlatformApplicationAttributesInput {
        /// The application.
        PlatformApplicationArn: platform_application_arn: String,
        /// Attributes to set. Required in the botocore model; AWS checks the ARN's form
        /// before their absence (recorded), so the Service refuses `None`
        /// ([`loft_core::service::Sns::set_platform_attributes`]).
        Attributes: attributes: Option<MapStringToString>,
    }

    /// `SetSMSAttributes` input.
    pub struct SetSMSAttributesInput {
        /// Settings to set.
        attributes: attributes: MapStringToString,
    }
    /// `SetSMSAttributes` output.
    pub struct SetSMSAttributesResponse {}

    /// `SetSubscriptionAttributes` input.
    pub struct SetSubscriptionAttributesInput {
        /// The subscription.
        SubscriptionArn: subscription_arn: String,
        /// The attribute.
        AttributeName: attribute_name: String,
        /// Its new value.
        AttributeValue: attribute_value: Option<String>,
    }

    /// `SetTopicAttributes` input.
    pub struct SetTopicAttributesInput {
        /// The topic.
        TopicArn: topic_arn: String,
        /// The attribute.
        AttributeName: attribute_name: String,
        /// Its new value.
        AttributeValue: attribute_value: Option<String>,
    }

    /// `Subscribe` input.
    pub struct SubscribeInput {
        /// The topic.
        TopicArn: topic_arn: String,
        /// `sqs`, `http`, `https`, `email`, ...
        Protocol: protocol: String,
        /// Where to deliver.
        Endpoint: endpoint: Option<String>,
        /// Subscription attributes.
        Attributes: attributes: Option<MapStringToString>,
        /// Whether to answer the ARN even before confirmation.
        ReturnSubscriptionArn: return_subscription_arn: Option<bool>,
    }
    /// `Subscribe` output.
    pub struct SubscribeResponse {
        /// The subscription, or `pending confirmation`.
        SubscriptionArn: subscription_arn: Option<String>,
    }

    /// `TagResource` input.
    pub struct TagResourceRequest {
        /// The topic.
        ResourceArn: resource_arn: String,
        /// Tags to add or replace.
        Tags: tags: Vec<Tag>,
    }
    /// `TagResource` output.
    pub struct TagResourceResponse {}

    /// `Unsubscribe` input.
    pub struct UnsubscribeInput {
        /// The subscription.
        SubscriptionArn: subscription_arn: String,
    }

    /// `UntagResource` input.
    pub struct UntagResourceRequest {
        /// The topic.
        ResourceArn: resource_arn: String,
        /// Keys to remove.
        TagKeys: tag_keys: Vec<String>,
    }
    /// `UntagResource` output.
    pub struct UntagResourceResponse {}
}

operations! {
    /// An SNS request: the operation and its input.
    pub enum SnsRequest;
    /// An SNS answer: the operation and its output.
    pub enum SnsResponse;
    /// Every SNS operation Loft implements, with its input and output members.
    pub static OPERATIONS;
    {
        AddPermission(AddPermissionInput) -> NoOutput,
            sns:AddPermission on TopicArn(topic_arn),
        CheckIfPhoneNumberIsOptedOut(CheckIfPhoneNumberIsOptedOutInput)
            -> CheckIfPhoneNumberIsOptedOutResponse,
            sns:CheckIfPhoneNumberIsOptedOut on Account,
        ConfirmSubscription(ConfirmSubscriptionInput) -> ConfirmSubscriptionResponse,
            sns:ConfirmSubscription on ConfirmationTopic(topic_arn),
        CreatePlatformApplication(CreatePlatformApplicationInput)
            -> CreatePlatformApplicationResponse,
            sns:CreatePlatformApplication on Account,
        CreatePlatformEndpoint(CreatePlatformEndpointInput) -> CreateEndpointResponse,
            sns:CreatePlatformEndpoint on Account,
        CreateSMSSandboxPhoneNumber(CreateSMSSandboxPhoneNumberInput)
            -> CreateSMSSandboxPhoneNumberResult,
            sns:CreateSMSSandboxPhoneNumber on Account,
        CreateTopic(CreateTopicInput) -> CreateTopicResponse,
            sns:CreateTopic on TopicName(name),
        DeleteEndpoint(DeleteEndpointInput) -> NoOutput,
            sns:DeleteEndpoint on Account,
        DeletePlatformApplication(DeletePlatformApplicationInput) -> NoOutput,
            sns:DeletePlatformApplication on Account,
        DeleteSMSSandboxPhoneNumber(DeleteSMSSandboxPhoneNumberInput)
            -> DeleteSMSSandboxPhoneNumberResult,
            sns:DeleteSMSSandboxPhoneNumber on Account,
        DeleteTopic(DeleteTopicInput) -> NoOutput,
            sns:DeleteTopic on TopicArn(topic_arn),
        GetDataProtectionPolicy(GetDataProtectionPolicyInput)
            -> GetDataProtectionPolicyResponse,
            sns:GetDataProtectionPolicy on ResourceArn(resource_arn),
        GetEndpointAttributes(GetEndpointAttributesInput) -> GetEndpointAttributesResponse,
            sns:GetEndpointAttributes on Account,
        GetPlatformApplicationAttributes(GetPlatformApplicationAttributesInput)
            -> GetPlatformApplicationAttributesResponse,
            sns:GetPlatformApplicationAttributes on Account,
        GetSMSAttributes(GetSMSAttributesInput) -> GetSMSAttributesResponse,
            sns:GetSMSAttributes on Account,
        GetSMSSandboxAccountStatus(GetSMSSandboxAccountStatusInput)
            -> GetSMSSandboxAccountStatusResult,
            sns:GetSMSSandboxAccountStatus on Account,
        GetSubscriptionAttributes(GetSubscriptionAttributesInput)
            -> GetSubscriptionAttributesResponse,
            sns:GetSubscriptionAttributes on Subscription(subscription_arn),
        GetTopicAttributes(GetTopicAttributesInput) -> GetTopicAttributesResponse,
            sns:GetTopicAttributes on TopicArn(topic_arn),
        ListEndpointsByPlatformApplication(ListEndpointsByPlatformApplicationInput)
            -> ListEndpointsByPlatformApplicationResponse,
            sns:ListEndpointsByPlatformApplication on Account,
        ListOriginationNumbers(ListOriginationNumbersRequest) -> ListOriginationNumbersResult,
            sns:ListOriginationNumbers on Account,
        ListPhoneNumbersOptedOut(ListPhoneNumbersOptedOutInput)
            -> ListPhoneNumbersOptedOutResponse,
            sns:ListPhoneNumbersOptedOut on Account,
        ListPlatformApplications(ListPlatformApplicationsInput)
            -> ListPlatformApplicationsResponse,
            sns:ListPlatformApplications on Account,
        ListSMSSandboxPhoneNumbers(ListSMSSandboxPhoneNumbersInput)
            -> ListSMSSandboxPhoneNumbersResult,
            sns:ListSMSSandboxPhoneNumbers on Account,
        ListSubscriptions(ListSubscriptionsInput) -> ListSubscriptionsResponse,
            sns:ListSubscriptions on Account,
        ListSubscriptionsByTopic(ListSubscriptionsByTopicInput)
            -> ListSubscriptionsByTopicResponse,
            sns:ListSubscriptionsByTopic on TopicArn(topic_arn),
        ListTagsForResource(ListTagsForResourceRequest) -> ListTagsForResourceResponse,
            sns:ListTagsForResource on ResourceArn(resource_arn),
        ListTopics(ListTopicsInput) -> ListTopicsResponse,
            sns:ListTopics on Account,
        OptInPhoneNumber(OptInPhoneNumberInput) -> OptInPhoneNumberResponse,
            sns:OptInPhoneNumber on Account,
        Publish(PublishInput) -> PublishResponse,
            sns:Publish on PublishTarget(topic_arn, target_arn),
        PublishBatch(PublishBatchInput) -> PublishBatchResponse,
            sns:Publish on TopicArn(topic_arn),
        PutDataProtectionPolicy(PutDataProtectionPolicyInput) -> NoOutput,
            sns:PutDataProtectionPolicy on ResourceArn(resource_arn),
        RemovePermission(RemovePermissionInput) -> NoOutput,
            sns:RemovePermission on TopicArn(topic_arn),
        SetEndpointAttributes(SetEndpointAttributesInput) -> NoOutput,
            sns:SetEndpointAttributes on Account,
        SetPlatformApplicationAttributes(SetPlatformApplicationAttributesInput) -> NoOutput,
            sns:SetPlatformApplicationAttributes on Account,
        SetSMSAttributes(SetSMSAttributesInput) -> SetSMSAttributesResponse,
            sns:SetSMSAttributes on Account,
        SetSubscriptionAttributes(SetSubscriptionAttributesInput) -> NoOutput,
            sns:SetSubscriptionAttributes on Subscription(subscription_arn),
        SetTopicAttributes(SetTopicAttributesInput) -> NoOutput,
            sns:SetTopicAttributes on TopicArn(topic_arn),
        Subscribe(SubscribeInput) -> SubscribeResponse,
            sns:Subscribe on TopicArn(topic_arn),
        TagResource(TagResourceRequest) -> TagResourceResponse,
            sns:TagResource on ResourceArn(resource_arn),
        Unsubscribe(UnsubscribeInput) -> NoOutput,
            sns:Unsubscribe on Subscription(subscription_arn),
        UntagResource(UntagResourceRequest) -> UntagResourceResponse,
            sns:UntagResource on ResourceArn(resource_arn),
        VerifySMSSandboxPhoneNumber(VerifySMSSandboxPhoneNumberInput)
            -> VerifySMSSandboxPhoneNumberResult,
            sns:VerifySMSSandboxPhoneNumber on Account,
    }
}
