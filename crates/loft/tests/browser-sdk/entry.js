// The part of the AWS SDK for JavaScript v3 (browser build) that Loft's CORS test uses,
// bundled by crates/loft/tests/ops/browser_sdk.rs with esbuild into one script that sets
// window.LoftSdk. Nothing here is Loft's code; it only picks the SDK's exports.
import {
  SQSClient,
  CreateQueueCommand,
  SendMessageCommand,
  ReceiveMessageCommand,
} from "@aws-sdk/client-sqs";
import {
  SNSClient,
  CreateTopicCommand,
  SubscribeCommand,
  PublishCommand,
} from "@aws-sdk/client-sns";

window.LoftSdk = {
  SQSClient,
  CreateQueueCommand,
  SendMessageCommand,
  ReceiveMessageCommand,
  SNSClient,
  CreateTopicCommand,
  SubscribeCommand,
  PublishCommand,
};
