#!/usr/bin/env node
// A delivery worker as another team would write it: a kafkajs consumer of sendcap's outputs,
// decoding each record with Confluent's Avro deserializer from @confluentinc/schemaregistry (the
// writer schema is fetched by the id in the record).
//
//   node delivery-worker.js --bootstrap 127.0.0.1:9092 \
//     --registry http://127.0.0.1:8080/apis/ccompat/v7 [--topics deliveries,suppressed]
//
// Reads the topics from the beginning to the end offsets they have when it starts (committed
// records only) and prints one JSON line per record, then one summary line ("event": "end").
// Exits with 1 if a record could not be decoded or the end was not reached in --timeout-ms.
'use strict';

const { parseArgs } = require('node:util');
const { Kafka, logLevel } = require('kafkajs');
const {
  SchemaRegistryClient,
  SerdeType,
  AvroDeserializer,
  SubjectNameStrategyType,
} = require('@confluentinc/schemaregistry');

const { values: args } = parseArgs({
  options: {
    bootstrap: { type: 'string' },
    registry: { type: 'string' },
    topics: { type: 'string', default: 'deliveries,suppressed' },
    group: { type: 'string', default: `delivery-worker-${process.pid}-${Date.now()}` },
    'timeout-ms': { type: 'string', default: '120000' },
  },
});

for (const name of ['bootstrap', 'registry']) {
  if (!args[name]) {
    console.error(`delivery-worker: --${name} is required`);
    process.exit(2);
  }
}

/** One output line: the fields a delivery worker acts on, whichever output the record is of. */
function line(topic, partition, offset, raw, record) {
  const send = record.send;
  const out = {
    topic,
    partition,
    offset: Number(offset),
    schemaId: raw.readInt32BE(1),
    messageId: send.messageId,
    outcome: 'reason' in record ? 'suppressed' : 'allowed',
    userId: send.userId,
    campaignId: send.campaignId,
    channel: send.channel,
    scheduledAt: send.scheduledAt,
    transactional: send.transactional,
    userTimeZone: send.userTimeZone,
    attributes: send.attributes,
    segment: record.segment,
    decidedAt: record.decidedAt,
  };
  if ('reason' in record) {
    Object.assign(out, {
      reason: record.reason,
      capWindow: record.capWindow,
      capLimit: record.capLimit,
      capCount: record.capCount,
      nextEligibleAt: record.nextEligibleAt,
      globalCap: record.globalCap,
      shadow: record.shadow,
    });
  } else {
    out.failOpen = record.failOpen;
  }
  return out;
}

async function main() {
  const topics = args.topics.split(',');
  const registry = new SchemaRegistryClient({
    baseURLs: [args.registry],
    createAxiosDefaults: { timeout: 10_000 },
    maxRetries: 2,
  });
  // TopicNameStrategy, named, as in the campaign engine: the default (ASSOCIATED) asks for an
  // endpoint a Confluent-compatible registry such as Apicurio's lacks before falling back to it.
  const deserializer = new AvroDeserializer(registry, SerdeType.VALUE, {
    subjectNameStrategyType: SubjectNameStrategyType.TOPIC,
  });
  const kafka = new Kafka({
    clientId: 'delivery-worker',
    brokers: args.bootstrap.split(','),
    logLevel: logLevel.WARN,
  });

  // The end of each partition now: reading stops there.
  const admin = kafka.admin();
  await admin.connect();
  const ends = new Map();
  try {
    for (const topic of topics) {
      for (const p of await admin.fetchTopicOffsets(topic)) {
        if (BigInt(p.high) > BigInt(p.low)) {
          ends.set(`${topic}/${p.partition}`, BigInt(p.high));
        }
      }
    }
  } finally {
    await admin.disconnect();
  }

  const counts = Object.fromEntries(topics.map((t) => [t, 0]));
  let errors = 0;
  let reachedEnd;
  const allRead = new Promise((resolve) => {
    reachedEnd = resolve;
  });
  const consumed = (topic, partition, lastOffset) => {
    const key = `${topic}/${partition}`;
    if (ends.has(key) && BigInt(lastOffset) + 1n >= ends.get(key)) {
      ends.delete(key);
    }
    if (ends.size === 0) {
      reachedEnd();
    }
  };

  const consumer = kafka.consumer({ groupId: args.group });
  const started = Date.now();
  let timedOut = false;
  if (ends.size > 0) {
    await consumer.connect();
    // Batches of transaction markers only end here too, so a partition whose last record is a
    // commit marker is seen to its end.
    consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload }) =>
      consumed(payload.topic, payload.partition, payload.lastOffset),
    );
    for (const topic of topics) {
      await consumer.subscribe({ topic, fromBeginning: true });
    }
    await consumer.run({
      eachMessage: async ({ topic, partition, message }) => {
        try {
          const record = await deserializer.deserialize(topic, message.value);
          counts[topic]++;
          console.log(JSON.stringify(line(topic, partition, message.offset, message.value, record)));
        } catch (e) {
          errors++;
          console.log(
            JSON.stringify({
              event: 'error',
              topic,
              partition,
              offset: Number(message.offset),
              error: String(e && e.message ? e.message : e),
            }),
          );
        }
      },
    });
    let timer;
    const timeout = new Promise((resolve) => {
      timer = setTimeout(() => {
        timedOut = true;
        resolve();
      }, Number(args['timeout-ms']));
    });
    await Promise.race([allRead, timeout]);
    clearTimeout(timer);
    await consumer.disconnect();
  }
  console.log(
    JSON.stringify({
      event: 'end',
      records: counts,
      errors,
      reachedEnd: !timedOut,
      notReached: [...ends.keys()],
      ms: Date.now() - started,
    }),
  );
  if (errors > 0 || timedOut) {
    process.exit(1);
  }
}

main().catch((e) => {
  console.error(`delivery-worker: ${e && e.stack ? e.stack : e}`);
  process.exit(1);
});
