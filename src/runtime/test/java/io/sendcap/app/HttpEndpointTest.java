package io.sendcap.app;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

class HttpEndpointTest {
  private static final HttpEndpoint.Health UP = new HttpEndpoint.Health(true, "fine");
  private static final Duration REQUEST_TIMEOUT = Duration.ofMillis(500);

  @Test
  void listensOnTheInterfaceOfHttpHost() throws Exception {
    HttpEndpoint loopback = HttpEndpoint.start("127.0.0.1", 0, () -> "", () -> UP, () -> UP);
    HttpEndpoint every = HttpEndpoint.start("0.0.0.0", 0, () -> "", () -> UP, () -> UP);
    try {
      assertThat(loopback.address().getAddress().isLoopbackAddress()).isTrue();
      assertThat(every.address().getAddress().isAnyLocalAddress()).isTrue();
      assertThat(get(loopback, "/health/live").statusCode()).isEqualTo(200);
    } finally {
      loopback.close();
      every.close();
    }
  }

  @Test
  void answersProbesWhileClientsHoldConnectionsOpenWithNothingOrHalfARequest() throws Exception {
    try (HttpEndpoint http = start(() -> UP);
        Socket silent = connect(http);
        Socket half = connect(http)) {
      half.getOutputStream().write("GET /health/li".getBytes(StandardCharsets.US_ASCII));
      half.getOutputStream().flush();
      assertThat(get(http, "/health/live").statusCode()).isEqualTo(200);
      assertThat(get(http, "/health/ready").statusCode()).isEqualTo(200);
      assertThat(silent.isClosed() || half.isClosed())
          .as("the test's sockets still open")
          .isFalse();
    }
  }

  @Test
  void closesAConnectionWhoseRequestDoesNotArriveWithinTheTimeout() throws Exception {
    try (HttpEndpoint http = start(() -> UP);
        Socket half = connect(http)) {
      OutputStream out = half.getOutputStream();
      out.write("GET /metrics HTTP/1.1\r\nHost: x\r\n".getBytes(StandardCharsets.US_ASCII));
      out.flush();
      half.setSoTimeout((int) REQUEST_TIMEOUT.multipliedBy(10).toMillis());
      InputStream in = half.getInputStream();
      long start = System.nanoTime();
      int read;
      try {
        read = in.read();
      } catch (SocketTimeoutException e) {
        read = -2; // still open
      } catch (IOException e) {
        read = -1; // reset: closed too
      }
      assertThat(read).as("the server closed the stalled connection").isEqualTo(-1);
      assertThat(Duration.ofNanos(System.nanoTime() - start))
          .isLessThan(REQUEST_TIMEOUT.multipliedBy(8));
    }
  }

  @Test
  void servesSeveralRequestsAtOnce() throws Exception {
    CountDownLatch together = new CountDownLatch(2);
    try (HttpEndpoint http =
        start(
            () -> {
              together.countDown();
              try {
                return new HttpEndpoint.Health(together.await(5, TimeUnit.SECONDS), "together");
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return new HttpEndpoint.Health(false, "interrupted");
              }
            })) {
      List<CompletableFuture<HttpResponse<String>>> probes = new ArrayList<>();
      for (int i = 0; i < 2; i++) {
        probes.add(
            HttpClient.newHttpClient()
                .sendAsync(request(http, "/health/ready"), HttpResponse.BodyHandlers.ofString()));
      }
      for (CompletableFuture<HttpResponse<String>> probe : probes) {
        assertThat(probe.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
      }
    }
  }

  private static HttpEndpoint start(Supplier<HttpEndpoint.Health> ready) {
    return HttpEndpoint.start("127.0.0.1", 0, () -> "", () -> UP, ready, REQUEST_TIMEOUT);
  }

  private static Socket connect(HttpEndpoint http) throws Exception {
    Socket socket = new Socket();
    socket.connect(new InetSocketAddress("127.0.0.1", http.port()), 2_000);
    return socket;
  }

  private static HttpRequest request(HttpEndpoint http, String path) {
    return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + http.port() + path))
        .timeout(Duration.ofSeconds(5))
        .build();
  }

  private static HttpResponse<String> get(HttpEndpoint http, String path) throws Exception {
    return HttpClient.newHttpClient()
        .send(request(http, path), HttpResponse.BodyHandlers.ofString());
  }
}
