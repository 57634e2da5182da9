package io.sendcap.serde;

import static org.assertj.core.api.Assertions.assertThat;

import io.sendcap.avro.Channel;
import io.sendcap.avro.ScheduledSend;
import io.sendcap.testing.ByteMutator;
import io.sendcap.testing.ConfluentWire;
import io.sendcap.testing.FakeSchemaRegistry;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.apache.avro.Schema;
import org.apache.avro.SchemaBuilder;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.EncoderFactory;
import org.apache.avro.specific.SpecificDatumWriter;
import org.apache.kafka.common.errors.SerializationException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Fuzzes both Avro framings that sendcap reads from the input topic, the Confluent wire format and
 * single-object encoding: valid sends, of sendcap's schema, of an evolved one and of a recursive
 * one, mutated byte by byte ({@link ByteMutator}), and the corpus in {@code fuzz/confluent-avro}
 * and {@code fuzz/single-object-avro} replayed as it is. The property: decoding returns a send or
 * throws a {@link SerializationException}, never anything else (no StackOverflowError, no
 * OutOfMemoryError, no NullPointerException...), and allocates no more than a bound proportional to
 * the input.
 *
 * <p>A longer run: {@code mvn -pl src/runtime test -Dtest=AvroFramingFuzzTest
 * -Dfuzz.iterations=1000000} (and {@code -Dfuzz.seed=S} for other inputs); a failure prints the
 * seed that makes its input again.
 */
class AvroFramingFuzzTest {
  private static final String TOPIC = "campaign-sends";
  private static final int ITERATIONS = ByteMutator.iterations(2_000);
  private static final long ALLOCATION_BOUND = 16L << 20;
  private static final ScheduledSend SEND =
      ScheduledSend.newBuilder()
          .setMessageId("m-1")
          .setCampaignId("spring-sale")
          .setUserId(42L)
          .setChannel(Channel.PUSH)
          .setScheduledAt(Instant.parse("2026-11-02T09:00:00Z"))
          .setUserTimeZone("Europe/Berlin")
          .setAttributes(Map.of("template", "t-7"))
          .build();

  private static FakeSchemaRegistry registry;
  private static ConfluentAvroSerde<ScheduledSend> confluent;
  private static SingleObjectAvroSerde<ScheduledSend> singleObject;
  private static Schema evolved;
  private static int[] ids;

  @BeforeAll
  static void start() throws IOException {
    registry = new FakeSchemaRegistry();
    evolved = evolved();
    ids =
        new int[] {
          registry.register("campaign-sends-value", ScheduledSend.SCHEMA$),
          registry.register("campaign-sends-value", evolved),
          registry.register("campaign-sends-value", ConfluentWire.scheduledSendWithRelated()),
          4242
        };
    confluent = new ConfluentAvroSerde<>(ScheduledSend.class);
    confluent.configure(Map.of(SchemaRegistrySettings.URL, registry.url()), false);
    singleObject = new SingleObjectAvroSerde<>(ScheduledSend.class);
    singleObject.addWriterSchema(evolved);
    singleObject.addWriterSchema(ConfluentWire.scheduledSendWithRelated());
    for (int id : ids) {
      decodes("warm-up", framed(id, body(SEND)), b -> confluent.decode(TOPIC, b));
    }
  }

  @AfterAll
  static void stop() {
    registry.close();
  }

  /** ScheduledSend with an optional int and an array of optional strings added. */
  private static Schema evolved() {
    List<Schema.Field> fields = new ArrayList<>();
    for (Schema.Field f : ScheduledSend.SCHEMA$.getFields()) {
      fields.add(new Schema.Field(f, f.schema()));
    }
    fields.add(
        new Schema.Field(
            "priority",
            SchemaBuilder.unionOf().nullType().and().intType().endUnion(),
            null,
            Schema.Field.NULL_DEFAULT_VALUE));
    fields.add(
        new Schema.Field(
            "tags", SchemaBuilder.array().items().nullable().stringType(), null, List.of()));
    return Schema.createRecord(
        ScheduledSend.SCHEMA$.getName(), null, ScheduledSend.SCHEMA$.getNamespace(), false, fields);
  }

  private static byte[] body(ScheduledSend send) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    BinaryEncoder encoder = EncoderFactory.get().binaryEncoder(out, null);
    new SpecificDatumWriter<>(ScheduledSend.class).write(send, encoder);
    encoder.flush();
    return out.toByteArray();
  }

  private static byte[] framed(int id, byte[] body) {
    return ByteBuffer.allocate(5 + body.length).put((byte) 0).putInt(id).put(body).array();
  }

  @Test
  void theValidInputsOfTheCorpusDecodeToTheSend() {
    for (String valid : List.of("own.bin", "evolved.bin", "recursive-shallow.bin")) {
      assertThat(confluent.decode(TOPIC, ByteMutator.read(corpusFile("confluent-avro", valid))))
          .as(valid)
          .isEqualTo(SEND);
      assertThat(singleObject.decode(ByteMutator.read(corpusFile("single-object-avro", valid))))
          .as(valid)
          .isEqualTo(SEND);
    }
  }

  private static Path corpusFile(String parser, String name) {
    return ByteMutator.corpus(parser).stream()
        .filter(f -> f.getFileName().toString().equals(name))
        .findFirst()
        .orElseThrow();
  }

  @Test
  void theCorpusDecodesToASendOrItsDeclaredError() {
    for (Path file : ByteMutator.corpus("confluent-avro")) {
      decodes("corpus " + file, ByteMutator.read(file), b -> confluent.decode(TOPIC, b));
    }
    for (Path file : ByteMutator.corpus("single-object-avro")) {
      decodes("corpus " + file, ByteMutator.read(file), singleObject::decode);
      decodes("corpus " + file, ByteMutator.read(file), b -> confluent.decode(TOPIC, b));
    }
  }

  @Test
  void mutatedConfluentRecordsDecodeToASendOrItsDeclaredError() {
    ByteMutator mutator =
        new ByteMutator(ByteMutator.seeds(ByteMutator.corpus("confluent-avro"), List.of()));
    long first = ByteMutator.firstSeed();
    for (long seed = first; seed < first + ITERATIONS; seed++) {
      byte[] input = mutator.input(seed);
      if (input.length >= 5 && input[0] == 0) {
        // Only ids the registry was told of, and one it does not know: no request per input.
        ByteBuffer.wrap(input, 1, 4).putInt(ids[(int) Math.floorMod(seed, (long) ids.length)]);
      }
      decodes("seed " + seed, input, b -> confluent.decode(TOPIC, b));
    }
  }

  @Test
  void mutatedSingleObjectRecordsDecodeToASendOrItsDeclaredError() {
    ByteMutator mutator =
        new ByteMutator(ByteMutator.seeds(ByteMutator.corpus("single-object-avro"), List.of()));
    long first = ByteMutator.firstSeed();
    for (long seed = first; seed < first + ITERATIONS; seed++) {
      byte[] input = mutator.input(seed);
      decodes("seed " + seed, input, singleObject::decode);
      decodes("seed " + seed, input, b -> singleObject.decodeKeepingBody(b));
    }
  }

  /** Decodes an input; fails naming it unless it gives a send or a SerializationException. */
  private static void decodes(String which, byte[] input, Function<byte[], ?> decode) {
    ByteMutator.returnsOrThrows(
        which, input, SerializationException.class, ALLOCATION_BOUND, 16, decode::apply);
  }
}
