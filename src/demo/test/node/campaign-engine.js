#!/usr/bin/env node
// A campaign engine as another team would write it: kafkajs with its default producer settings
// (records stamped with the time they are produced) and Confluent's Avro serializer from
// @confluentinc/schemaregistry, producing a blast of ScheduledSends scheduled up to days ahead.
//
//   node campaign-engine.js --bootstrap 127.0.0.1:9092 \
//     --registry http://127.0.0.1:8080/apis/ccompat/v7 [--topic campaign-sends] [--count 4000] \
//     [--users 200] [--days 3] [--seed 1] [--manifest sends.jsonl]
//
// Prints JSON lines: the schema it registered, then a summary of what it produced. With
// --manifest, also writes every send it produced, in order, as one JSON line each.
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const { parseArgs } = require('node:util');
const { Kafka, Partitioners, logLevel } = require('kafkajs');
const {
  SchemaRegistryClient,
  SerdeType,
  AvroSerializer,
  SubjectNameStrategyType,
} = require('@confluentinc/schemaregistry');

const CHANNELS = ['EMAIL', 'PUSH', 'SMS', 'IN_APP'];
const ZONES = [null, null, 'Europe/Paris', 'America/New_York', 'Asia/Tokyo'];
const LOCALES = ['en-US', 'fr-FR', 'ja-JP'];
const SUBJECTS = ['Last chance ⏰', "Soldes d'été — jusqu'à -50 %", '週末セール', 'Your weekly digest'];

const OPTIONS = {
  bootstrap: { type: 'string' },
  registry: { type: 'string' },
  topic: { type: 'string', default: 'campaign-sends' },
  count: { type: 'string', default: '4000' },
  users: { type: 'string', default: '200' },
  days: { type: 'string', default: '3' },
  campaigns: { type: 'string', default: '12' },
  seed: { type: 'string', default: '1' },
  schema: {
    type: 'string',
    default: path.join(__dirname, '..', '..', '..', '..', 'schemas', 'ScheduledSend.avsc'),
  },
  manifest: { type: 'string' },
  batch: { type: 'string', default: '500' },
};

function required(args, name) {
  if (!args[name]) {
    console.error(`campaign-engine: --${name} is required`);
    process.exit(2);
  }
  return args[name];
}

// mulberry32: a small seeded generator, so that a seed always gives the same blast.
function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/**
 * The blast: campaigns starting between a few minutes and `days` ahead, produced one after the
 * other in the order they start, each send within an hour of its campaign's start, to random users
 * and in random order within the campaign (so a user's sends can arrive out of order of their
 * scheduled times); about one in fifty is a transactional send, scheduled any time in those days.
 */
function blast(now, count, users, days, campaigns, seed) {
  const next = mulberry32(seed);
  const pick = (list) => list[Math.floor(next() * list.length)];
  const starts = [];
  for (let c = 0; c < campaigns; c++) {
    starts.push(now + 5 * MINUTE + Math.floor(next() * (days * 24 * HOUR - 2 * HOUR)));
  }
  starts.sort((a, b) => a - b);
  const sends = [];
  for (let i = 0; i < count; i++) {
    const userId = 1 + Math.floor(next() * users);
    const transactional = next() < 0.02;
    const c = Math.floor((i * campaigns) / count);
    sends.push({
      messageId: `engine-${seed}-${i}`,
      campaignId: transactional ? 'receipts' : `campaign-${c}`,
      userId,
      channel: pick(CHANNELS),
      scheduledAt: transactional
        ? now + Math.floor(next() * days * 24 * HOUR)
        : starts[c] + Math.floor(next() * HOUR),
      transactional,
      userTimeZone: ZONES[userId % ZONES.length],
      attributes: transactional
        ? { template: 'receipt', locale: pick(LOCALES) }
        : { template: `tpl-${c}`, locale: pick(LOCALES), subject: pick(SUBJECTS) },
    });
  }
  return sends;
}

async function main() {
  const { values: args } = parseArgs({ options: OPTIONS });
  const bootstrap = required(args, 'bootstrap');
  const registryUrl = required(args, 'registry');
  const topic = args.topic;
  const subject = `${topic}-value`;

  const registry = new SchemaRegistryClient({
    baseURLs: [registryUrl],
    createAxiosDefaults: { timeout: 10_000 },
    maxRetries: 2,
  });
  // The engine registers its schema under the topic's subject (TopicNameStrategy), as
  // auto.register.schemas does in Confluent's Java serializer: this serializer's own
  // autoRegisterSchemas would register a schema inferred from the JavaScript object instead.
  const schema = fs.readFileSync(args.schema, 'utf8');
  const id = await registry.register(subject, { schemaType: 'AVRO', schema });
  console.log(JSON.stringify({ event: 'schema', subject, id }));
  // TopicNameStrategy, named: the client's default (ASSOCIATED) first asks the registry for
  // subjects associated with the topic, an endpoint a Confluent-compatible registry such as
  // Apicurio's lacks (404, then it falls back to the topic's subject).
  const serializer = new AvroSerializer(registry, SerdeType.VALUE, {
    useLatestVersion: true,
    subjectNameStrategyType: SubjectNameStrategyType.TOPIC,
  });

  const kafka = new Kafka({
    clientId: 'campaign-engine',
    brokers: bootstrap.split(','),
    logLevel: logLevel.WARN,
  });
  // The default partitioner (murmur2 of the key, as Java's), named only to silence kafkajs's
  // warning that its default changed in 2.0.
  const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
  await producer.connect();

  const started = Date.now();
  const sends = blast(
    started,
    Number(args.count),
    Number(args.users),
    Number(args.days),
    Number(args.campaigns),
    Number(args.seed),
  );
  const manifest = args.manifest ? fs.openSync(args.manifest, 'w') : null;
  const batch = Number(args.batch);
  let schemaId = null;
  try {
    for (let from = 0; from < sends.length; from += batch) {
      const messages = [];
      for (const send of sends.slice(from, from + batch)) {
        const value = await serializer.serialize(topic, send);
        schemaId = value.readInt32BE(1);
        // The key is the user id as a decimal string; no timestamp: the producer stamps it.
        messages.push({ key: String(send.userId), value });
        if (manifest !== null) {
          fs.writeSync(manifest, JSON.stringify(send) + '\n');
        }
      }
      await producer.send({ topic, messages });
    }
  } finally {
    if (manifest !== null) {
      fs.closeSync(manifest);
    }
    await producer.disconnect();
  }
  const finished = Date.now();
  const scheduled = sends.map((s) => s.scheduledAt);
  console.log(
    JSON.stringify({
      event: 'produced',
      topic,
      records: sends.length,
      schemaId,
      transactional: sends.filter((s) => s.transactional).length,
      users: new Set(sends.map((s) => s.userId)).size,
      producedFrom: new Date(started).toISOString(),
      producedTo: new Date(finished).toISOString(),
      scheduledFrom: new Date(Math.min(...scheduled)).toISOString(),
      scheduledTo: new Date(Math.max(...scheduled)).toISOString(),
      first: sends[0],
    }),
  );
}

module.exports = { blast };

if (require.main === module) {
  main().catch((e) => {
    console.error(`campaign-engine: ${e && e.stack ? e.stack : e}`);
    process.exit(1);
  });
}
