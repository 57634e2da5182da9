#!/usr/bin/env python3
"""A campaign engine as another team would write it in Python, with Debian's packages:
python3-confluent-kafka's producer with its default settings (records stamped with the time they
are produced) and its Avro serializer (confluent_kafka.avro, on python3-avro), which registers the
schema under the topic's subject, producing a blast of ScheduledSends scheduled up to days ahead.

    python3 campaign_engine.py --bootstrap 127.0.0.1:9092 \\
        --registry http://127.0.0.1:8080/apis/ccompat/v7 [--topic campaign-sends] [--count 4000] \\
        [--users 200] [--days 3] [--seed 1] [--manifest sends.jsonl]

Prints JSON lines: the schema it registered, then a summary of what it produced. With --manifest,
also writes every send it produced, in order, as one JSON line each. The blast is the one
src/demo/test/node/campaign-engine.js makes from the same seed and start time.
"""
import argparse
import datetime
import json
import os
import sys
import time

from confluent_kafka import Producer
from confluent_kafka.avro import CachedSchemaRegistryClient, loads
from confluent_kafka.avro.serializer.message_serializer import MessageSerializer

CHANNELS = ["EMAIL", "PUSH", "SMS", "IN_APP"]
ZONES = [None, None, "Europe/Paris", "America/New_York", "Asia/Tokyo"]
LOCALES = ["en-US", "fr-FR", "ja-JP"]
SUBJECTS = ["Last chance ⏰", "Soldes d'été — jusqu'à -50 %", "週末セール", "Your weekly digest"]
MINUTE = 60_000
HOUR = 60 * MINUTE
EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def mulberry32(seed):
    """mulberry32, as in the Node engine: a small seeded generator of floats in [0, 1)."""
    state = [seed & 0xFFFFFFFF]

    def imul(a, b):
        return (a * b) & 0xFFFFFFFF

    def next_float():
        state[0] = (state[0] + 0x6D2B79F5) & 0xFFFFFFFF
        t = state[0]
        t = imul(t ^ (t >> 15), t | 1)
        t ^= (t + imul(t ^ (t >> 7), t | 61)) & 0xFFFFFFFF
        return ((t ^ (t >> 14)) & 0xFFFFFFFF) / 4294967296

    return next_float


def blast(now, count, users, days, campaigns, seed):
    """Campaigns starting between a few minutes and `days` ahead, produced in the order they
    start, each send within an hour of its campaign's start, to random users; about one in fifty
    is a transactional send, scheduled any time in those days."""
    rand = mulberry32(seed)

    def pick(values):
        return values[int(rand() * len(values))]

    starts = sorted(
        now + 5 * MINUTE + int(rand() * (days * 24 * HOUR - 2 * HOUR)) for _ in range(campaigns)
    )
    sends = []
    for i in range(count):
        user_id = 1 + int(rand() * users)
        transactional = rand() < 0.02
        c = (i * campaigns) // count
        send = {
            "messageId": f"engine-{seed}-{i}",
            "campaignId": "receipts" if transactional else f"campaign-{c}",
            "userId": user_id,
            "channel": pick(CHANNELS),
            "scheduledAt": (now + int(rand() * days * 24 * HOUR))
            if transactional
            else starts[c] + int(rand() * HOUR),
            "transactional": transactional,
            "userTimeZone": ZONES[user_id % len(ZONES)],
            "attributes": {"template": "receipt", "locale": pick(LOCALES)}
            if transactional
            else {"template": f"tpl-{c}", "locale": pick(LOCALES), "subject": pick(SUBJECTS)},
        }
        sends.append(send)
    return sends


def iso(millis):
    return (EPOCH + datetime.timedelta(milliseconds=millis)).isoformat(timespec="milliseconds")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description="Produces a blast of ScheduledSends.")
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--registry", required=True)
    parser.add_argument("--topic", default="campaign-sends")
    parser.add_argument("--count", type=int, default=4000)
    parser.add_argument("--users", type=int, default=200)
    parser.add_argument("--days", type=int, default=3)
    parser.add_argument("--campaigns", type=int, default=12)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--schema", default=os.path.join(here, "..", "..", "..", "..", "schemas", "ScheduledSend.avsc")
    )
    parser.add_argument("--manifest")
    args = parser.parse_args()
    sys.stdout.reconfigure(encoding="utf-8")

    registry = CachedSchemaRegistryClient({"url": args.registry})
    serializer = MessageSerializer(registry)
    with open(args.schema, encoding="utf-8") as f:
        schema = loads(f.read())

    producer = Producer({"bootstrap.servers": args.bootstrap, "client.id": "campaign-engine"})
    failures = []

    def delivered(err, _msg):
        if err is not None:
            failures.append(str(err))

    started = int(time.time() * 1000)
    sends = blast(started, args.count, args.users, args.days, args.campaigns, args.seed)
    manifest = open(args.manifest, "w", encoding="utf-8") if args.manifest else None
    schema_id = None
    try:
        for send in sends:
            record = dict(send)
            record["scheduledAt"] = EPOCH + datetime.timedelta(milliseconds=send["scheduledAt"])
            # Registers the schema under <topic>-value the first time (auto.register.schemas).
            value = serializer.encode_record_with_schema(args.topic, schema, record)
            schema_id = int.from_bytes(value[1:5], "big")
            if manifest is not None:
                manifest.write(json.dumps(send, ensure_ascii=False) + "\n")
            # The key is the user id as a decimal string; no timestamp: the producer stamps it.
            producer.produce(args.topic, key=str(send["userId"]), value=value, on_delivery=delivered)
            producer.poll(0)
        remaining = producer.flush(60)
    finally:
        if manifest is not None:
            manifest.close()
    finished = int(time.time() * 1000)
    # The id the serializer registered the schema under, and framed every record with.
    print(json.dumps({"event": "schema", "subject": f"{args.topic}-value", "id": schema_id}))
    if remaining or failures:
        print(
            f"campaign-engine: {remaining} records not sent; errors: {sorted(set(failures))}",
            file=sys.stderr,
        )
        sys.exit(1)
    scheduled = [s["scheduledAt"] for s in sends]
    print(
        json.dumps(
            {
                "event": "produced",
                "topic": args.topic,
                "records": len(sends),
                "schemaId": schema_id,
                "transactional": sum(1 for s in sends if s["transactional"]),
                "users": len({s["userId"] for s in sends}),
                "producedFrom": iso(started),
                "producedTo": iso(finished),
                "scheduledFrom": iso(min(scheduled)),
                "scheduledTo": iso(max(scheduled)),
                "first": sends[0],
            },
            ensure_ascii=False,
        )
    )


if __name__ == "__main__":
    main()
