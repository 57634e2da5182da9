#!/usr/bin/env python3
"""A delivery worker as another team would write it in Python, with Debian's packages: a
python3-confluent-kafka consumer of sendcap's outputs, decoding each record with its Avro
deserializer (confluent_kafka.avro, on python3-avro; the writer schema is fetched by the id in the
record).

    python3 delivery_worker.py --bootstrap 127.0.0.1:9092 \\
        --registry http://127.0.0.1:8080/apis/ccompat/v7 [--topics deliveries,suppressed]

Reads the topics from the beginning to the end offsets they have when it starts (committed records
only) and prints one JSON line per record, in the format of src/demo/test/node/delivery-worker.js, then
one summary line ("event": "end"). Exits with 1 if a record could not be decoded or the end was not
reached in --timeout-ms.
"""
import argparse
import datetime
import json
import os
import sys
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
from confluent_kafka.avro import CachedSchemaRegistryClient
from confluent_kafka.avro.serializer.message_serializer import MessageSerializer

EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def millis(value):
    """A timestamp-millis as epoch milliseconds: python3-avro reads it as a datetime."""
    if isinstance(value, datetime.datetime):
        return (value - EPOCH) // datetime.timedelta(milliseconds=1)
    return value


def line(msg, record):
    send = record["send"]
    suppressed = "reason" in record
    out = {
        "topic": msg.topic(),
        "partition": msg.partition(),
        "offset": msg.offset(),
        "schemaId": int.from_bytes(msg.value()[1:5], "big"),
        "messageId": send["messageId"],
        "outcome": "suppressed" if suppressed else "allowed",
        "userId": send["userId"],
        "campaignId": send["campaignId"],
        "channel": send["channel"],
        "scheduledAt": millis(send["scheduledAt"]),
        "transactional": send["transactional"],
        "userTimeZone": send["userTimeZone"],
        "attributes": send["attributes"],
        "segment": record["segment"],
        "decidedAt": millis(record["decidedAt"]),
    }
    if suppressed:
        for name in ("reason", "capWindow", "capLimit", "capCount"):
            out[name] = record[name]
        out["nextEligibleAt"] = millis(record["nextEligibleAt"])
        out["globalCap"] = record["globalCap"]
        out["shadow"] = record["shadow"]
    else:
        out["failOpen"] = record["failOpen"]
    return out


def main():
    parser = argparse.ArgumentParser(description="Reads and decodes sendcap's outputs.")
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--registry", required=True)
    parser.add_argument("--topics", default="deliveries,suppressed")
    parser.add_argument("--group", default=f"delivery-worker-{os.getpid()}-{int(time.time())}")
    parser.add_argument("--timeout-ms", type=int, default=120_000)
    args = parser.parse_args()
    sys.stdout.reconfigure(encoding="utf-8")
    topics = args.topics.split(",")

    deserializer = MessageSerializer(CachedSchemaRegistryClient({"url": args.registry}))
    # isolation.level is read_committed by default: sendcap writes in transactions.
    consumer = Consumer(
        {
            "bootstrap.servers": args.bootstrap,
            "group.id": args.group,
            "client.id": "delivery-worker",
            "enable.auto.commit": False,
        }
    )
    started = time.monotonic()
    counts = {t: 0 for t in topics}
    errors = 0
    ends = {}
    partitions = []
    for topic in topics:
        metadata = consumer.list_topics(topic, timeout=10).topics[topic]
        if metadata.error is not None:
            raise SystemExit(f"delivery-worker: topic {topic}: {metadata.error}")
        for p in metadata.partitions:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
            if high > low:
                ends[(topic, p)] = high
            partitions.append(TopicPartition(topic, p, OFFSET_BEGINNING))
    consumer.assign(partitions)

    deadline = started + args.timeout_ms / 1000
    while ends and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None:
            if msg.error() is not None:
                raise SystemExit(f"delivery-worker: {msg.error()}")
            try:
                record = deserializer.decode_message(msg.value())
                counts[msg.topic()] += 1
                print(json.dumps(line(msg, record), ensure_ascii=False), flush=False)
            except Exception as e:  # a record this worker cannot decode is reported, not fatal
                errors += 1
                print(
                    json.dumps(
                        {
                            "event": "error",
                            "topic": msg.topic(),
                            "partition": msg.partition(),
                            "offset": msg.offset(),
                            "error": str(e),
                        }
                    )
                )
        # The position moves past transaction markers too, so a partition whose last record is a
        # commit marker is seen to its end.
        for tp in consumer.position([TopicPartition(t, p) for (t, p) in ends]):
            if tp.offset >= ends[(tp.topic, tp.partition)]:
                del ends[(tp.topic, tp.partition)]
    consumer.close()
    print(
        json.dumps(
            {
                "event": "end",
                "records": counts,
                "errors": errors,
                "reachedEnd": not ends,
                "notReached": [f"{t}/{p}" for (t, p) in ends],
                "ms": int((time.monotonic() - started) * 1000),
            }
        )
    )
    if errors or ends:
        sys.exit(1)


if __name__ == "__main__":
    main()
