// LocalStack's testcontainers module for Node (@testcontainers/localstack) starting the Loft
// image in place of LocalStack's, and the AWS SDK for JavaScript v3 running an SQS and an
// SNS round trip: the test a LocalStack user writes, with only the image name changed
// (LOFT_IMAGE). Run by tests/image/run.sh with DOCKER_HOST at podman's API service and
// TESTCONTAINERS_RYUK_DISABLED=true.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { LocalstackContainer } from "@testcontainers/localstack";
import {
  SQSClient,
  CreateQueueCommand,
  SendMessageCommand,
  ReceiveMessageCommand,
  DeleteMessageCommand,
  GetQueueAttributesCommand,
} from "@aws-sdk/client-sqs";
import {
  SNSClient,
  CreateTopicCommand,
  SubscribeCommand,
  PublishCommand,
} from "@aws-sdk/client-sns";

const image = process.env.LOFT_IMAGE ?? "loft:latest";
let container;
let config;

before(async () => {
  container = await new LocalstackContainer(image).start();
  config = {
    endpoint: container.getConnectionUri(),
    region: "us-east-1",
    credentials: { accessKeyId: "test", secretAccessKey: "test" },
  };
});

after(async () => {
  await container?.stop();
});

test("SQS round trip", async () => {
  const sqs = new SQSClient(config);
  const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: "orders" }));
  await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: "hello" }));
  const got = await sqs.send(new ReceiveMessageCommand({ QueueUrl, WaitTimeSeconds: 1 }));
  assert.deepEqual(got.Messages?.map((m) => m.Body), ["hello"]);
  await sqs.send(
    new DeleteMessageCommand({ QueueUrl, ReceiptHandle: got.Messages[0].ReceiptHandle }),
  );
});

test("SNS to SQS round trip", async () => {
  const sqs = new SQSClient(config);
  const sns = new SNSClient(config);
  const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: "events" }));
  const attrs = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ["QueueArn"] }),
  );
  const { TopicArn } = await sns.send(new CreateTopicCommand({ Name: "news" }));
  await sns.send(
    new SubscribeCommand({
      TopicArn,
      Protocol: "sqs",
      Endpoint: attrs.Attributes.QueueArn,
      Attributes: { RawMessageDelivery: "true" },
    }),
  );
  await sns.send(new PublishCommand({ TopicArn, Message: "extra extra" }));
  let bodies = [];
  const deadline = Date.now() + 10_000;
  while (bodies.length === 0 && Date.now() < deadline) {
    const got = await sqs.send(new ReceiveMessageCommand({ QueueUrl, WaitTimeSeconds: 1 }));
    bodies = (got.Messages ?? []).map((m) => m.Body);
  }
  assert.deepEqual(bodies, ["extra extra"]);
});
