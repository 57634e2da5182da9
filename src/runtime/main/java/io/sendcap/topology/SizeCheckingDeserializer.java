package io.sendcap.topology;

import io.sendcap.config.SendcapConfig;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.serialization.Deserializer;

/**
 * The input's value deserializer behind a bound on the send's size: a record whose value and
 * headers together exceed {@code cap.max-send-bytes} fails with a {@link SendTooLargeException}
 * before it is decoded, and goes to the dead-letter topic (see {@link UnreadableSendHandler}).
 *
 * <p>A send's delivery or suppression embeds the send and carries its headers, so it is about as
 * large as the send as read; the producer refuses a record larger than its {@code max.request.size}
 * before compression, which a compressed input batch passes at the broker. The bound costs a
 * comparison of lengths Kafka has already read: no send is encoded to measure it.
 */
final class SizeCheckingDeserializer<T> implements Deserializer<T> {
  private final Deserializer<T> delegate;
  private final int maxBytes;

  /**
   * @param delegate what reads the sends within the bound
   * @param maxBytes {@code cap.max-send-bytes}
   */
  SizeCheckingDeserializer(Deserializer<T> delegate, int maxBytes) {
    this.delegate = delegate;
    this.maxBytes = maxBytes;
  }

  /** The input's key deserializer: a key longer than {@link SendcapConfig#MAX_KEY_BYTES} fails. */
  static Deserializer<byte[]> keys() {
    return (topic, key) -> {
      if (key != null && key.length > SendcapConfig.MAX_KEY_BYTES) {
        throw new SendTooLargeException(
            "the record's key is "
                + key.length
                + " bytes, more than the "
                + SendcapConfig.MAX_KEY_BYTES
                + " a send's key may have (its outputs carry it)");
      }
      return key;
    };
  }

  @Override
  public T deserialize(String topic, byte[] data) {
    check(data, 0);
    return delegate.deserialize(topic, data);
  }

  @Override
  public T deserialize(String topic, Headers headers, byte[] data) {
    check(data, headers == null ? 0 : size(headers));
    return delegate.deserialize(topic, headers, data);
  }

  private void check(byte[] data, long headerBytes) {
    long bytes = (data == null ? 0 : data.length) + headerBytes;
    if (bytes > maxBytes) {
      throw new SendTooLargeException(
          "the send is "
              + bytes
              + " bytes (value "
              + (data == null ? 0 : data.length)
              + ", headers "
              + headerBytes
              + "), more than cap.max-send-bytes="
              + maxBytes
              + ": its delivery or suppression, which embeds it, could not be written");
    }
  }

  /** The bytes of the headers' keys (as characters) and values. */
  static long size(Headers headers) {
    long bytes = 0;
    for (Header h : headers) {
      bytes += size(h);
    }
    return bytes;
  }

  /**
   * The bytes of the headers' keys (as characters) and values, as {@link #size(Headers)} counts
   * them; within {@code cap.max-send-bytes}, so an int.
   */
  static int size(Header[] headers) {
    int bytes = 0;
    for (Header h : headers) {
      bytes += size(h);
    }
    return bytes;
  }

  /** A header's bytes as a send's size counts them: its key's characters and its value. */
  static int size(Header h) {
    return h.key().length() + (h.value() == null ? 0 : h.value().length);
  }

  @Override
  public void close() {
    delegate.close();
  }
}
