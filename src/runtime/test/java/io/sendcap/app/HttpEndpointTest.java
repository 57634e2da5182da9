package io.sendcap.app;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.Test;

class HttpEndpointTest {
  private static final HttpEndpoint.Health UP = new HttpEndpoint.Health(true, "fine");

  @Test
  void listensOnTheInterfaceOfHttpHost() throws Exception {
    HttpEndpoint loopback = HttpEndpoint.start("127.0.0.1", 0, () -> "", () -> UP, () -> UP);
    HttpEndpoint every = HttpEndpoint.start("0.0.0.0", 0, () -> "", () -> UP, () -> UP);
    try {
      assertThat(loopback.address().getAddress().isLoopbackAddress()).isTrue();
      assertThat(every.address().getAddress().isAnyLocalAddress()).isTrue();
      HttpResponse<String> live =
          HttpClient.newHttpClient()
              .send(
                  HttpRequest.newBuilder(
                          URI.create("http://127.0.0.1:" + loopback.port() + "/health/live"))
                      .build(),
                  HttpResponse.BodyHandlers.ofString());
      assertThat(live.statusCode()).isEqualTo(200);
    } finally {
      loopback.close();
      every.close();
    }
  }
}
