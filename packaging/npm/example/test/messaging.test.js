// SQS and SNS through the AWS SDK for JavaScript v3, sqs-producer and sqs-consumer, against
// the Loft that loft-server/global-setup started (AWS_ENDPOINT_URL points at it).
import { beforeEach, expect, test } from "vitest";
import {
  SQSClient, CreateQueueCommand, GetQueueAttributesCommand, ListQueuesCommand,
  ReceiveMessageCommand,
} from "@aws-sdk/client-sqs";
import { SNSClient, CreateTopicCommand, PublishCommand, SubscribeCommand } from "@aws-sdk/client-sns";
import { Producer } from "sqs-producer";
import { Consumer } from "sqs-consumer";

const sqs = new SQSClient({});
const sns = new SNSClient({});

beforeEach(async () => {
  const res = await fetch(`${process.env.LOFT_ENDPOINT}/_loft/reset`, { method: "POST" });
  expect(res.ok).toBe(true);
});

test("each test starts from an empty Loft", async () => {
  const listed = await sqs.send(new ListQueuesCommand({}));
  expect(listed.QueueUrls ?? []).toEqual([]);
});

test("sqs-producer sends and sqs-consumer handles", async () => {
  const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: "work" }));
  const producer = Producer.create({ queueUrl: QueueUrl, sqs });
  await producer.send([{ id: "1", body: "one" }, { id: "2", body: "two" }]);
  const handled = [];
  await new Promise((resolve, reject) => {
    const consumer = Consumer.create({
      queueUrl: QueueUrl,
      sqs,
      waitTimeSeconds: 1,
      handleMessage: async (m) => {
        handled.push(m.Body);
        if (handled.length === 2) {
          consumer.stop();
          resolve();
        }
        return m;
      },
    });
    consumer.on("error", reject);
    consumer.on("processing_error", reject);
    consumer.start();
  });
  expect(handled.sort()).toEqual(["one", "two"]);
});

test("SNS fans out to an SQS queue", async () => {
  const { TopicArn } = await sns.send(new CreateTopicCommand({ Name: "events" }));
  const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: "events-q" }));
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ["QueueArn"] }),
  );
  await sns.send(new SubscribeCommand({
    TopicArn, Protocol: "sqs", Endpoint: Attributes.QueueArn,
    Attributes: { RawMessageDelivery: "true" },
  }));
  await sns.send(new PublishCommand({ TopicArn, Message: "hello" }));
  const got = await sqs.send(new ReceiveMessageCommand({ QueueUrl, WaitTimeSeconds: 5 }));
  expect(got.Messages.map((m) => m.Body)).toEqual(["hello"]);
});
