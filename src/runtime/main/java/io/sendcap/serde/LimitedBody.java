package io.sendcap.serde;

import java.io.ByteArrayOutputStream;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Flow;

/**
 * A body subscriber of the JDK's HTTP client that keeps at most {@code limit} bytes of an answer:
 * past them it cancels the rest and says the body was cut, so that no answer, however large, costs
 * more memory than the limit.
 */
final class LimitedBody implements HttpResponse.BodySubscriber<LimitedBody.Body> {
  /**
   * An answer's body as read.
   *
   * @param bytes its first bytes, at most the limit
   * @param truncated whether it had more
   */
  record Body(byte[] bytes, boolean truncated) {
    /** The bytes as UTF-8 text. */
    String text() {
      return new String(bytes, StandardCharsets.UTF_8);
    }
  }

  private final int limit;
  private final ByteArrayOutputStream out = new ByteArrayOutputStream();
  private final CompletableFuture<Body> result = new CompletableFuture<>();
  private Flow.Subscription subscription;

  LimitedBody(int limit) {
    this.limit = limit;
  }

  @Override
  public CompletionStage<Body> getBody() {
    return result;
  }

  @Override
  public void onSubscribe(Flow.Subscription subscription) {
    this.subscription = subscription;
    subscription.request(Long.MAX_VALUE);
  }

  @Override
  public void onNext(List<ByteBuffer> items) {
    for (ByteBuffer item : items) {
      if (result.isDone()) {
        return;
      }
      int room = limit - out.size();
      if (item.remaining() > room) {
        byte[] part = new byte[room];
        item.get(part);
        out.writeBytes(part);
        subscription.cancel();
        result.complete(new Body(out.toByteArray(), true));
        return;
      }
      byte[] chunk = new byte[item.remaining()];
      item.get(chunk);
      out.writeBytes(chunk);
    }
  }

  @Override
  public void onError(Throwable error) {
    result.completeExceptionally(error);
  }

  @Override
  public void onComplete() {
    result.complete(new Body(out.toByteArray(), false));
  }
}
