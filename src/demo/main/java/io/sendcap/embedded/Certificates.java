package io.sendcap.embedded;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.Key;
import java.security.KeyStore;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A self-signed server certificate for 127.0.0.1 and localhost, made for one test or one {@code
 * embedded --secure} run with the JDK's keytool (no private key is checked in): a PKCS12 key store
 * for a Java server (the Kafka broker), PEM files for a server built on OpenSSL (redis-server) and
 * a PKCS12 trust store for the clients. The certificate is its own CA, valid for two days.
 *
 * @param keystore a PKCS12 key store holding the key and certificate, alias {@code server}
 * @param certificate the certificate, PEM
 * @param privateKey its private key, PKCS#8 PEM
 * @param truststore a PKCS12 trust store holding the certificate
 * @param password the password of both stores and of the key
 */
public record Certificates(
    Path keystore, Path certificate, Path privateKey, Path truststore, String password) {

  /**
   * The {@code redis-server} options of a TLS client port {@code tlsPort} presenting this
   * certificate (also the CA it trusts), clients not asked for one.
   */
  public List<String> redisTlsOptions(int tlsPort) {
    return List.of(
        "--tls-port",
        String.valueOf(tlsPort),
        "--tls-cert-file",
        certificate.toString(),
        "--tls-key-file",
        privateKey.toString(),
        "--tls-ca-cert-file",
        certificate.toString(),
        "--tls-auth-clients",
        "no");
  }

  /** Makes the certificate and its files in {@code dir}. */
  public static Certificates create(Path dir) throws IOException {
    String password = Long.toHexString(new SecureRandom().nextLong());
    Path keystore = dir.resolve("server.p12");
    Path certificate = dir.resolve("server.crt");
    Path privateKey = dir.resolve("server.key");
    Path truststore = dir.resolve("truststore.p12");
    keytool(
        "-genkeypair",
        "-alias",
        "server",
        "-keyalg",
        "EC",
        "-groupname",
        "secp256r1",
        "-dname",
        "CN=127.0.0.1",
        "-ext",
        "san=ip:127.0.0.1,dns:localhost",
        "-validity",
        "2",
        "-keystore",
        keystore.toString(),
        "-storetype",
        "PKCS12",
        "-storepass",
        password);
    keytool(
        "-exportcert",
        "-rfc",
        "-alias",
        "server",
        "-keystore",
        keystore.toString(),
        "-storepass",
        password,
        "-file",
        certificate.toString());
    keytool(
        "-importcert",
        "-noprompt",
        "-alias",
        "server",
        "-file",
        certificate.toString(),
        "-keystore",
        truststore.toString(),
        "-storetype",
        "PKCS12",
        "-storepass",
        password);
    try (InputStream in = Files.newInputStream(keystore)) {
      KeyStore store = KeyStore.getInstance("PKCS12");
      store.load(in, password.toCharArray());
      Key key = store.getKey("server", password.toCharArray());
      String pem =
          "-----BEGIN PRIVATE KEY-----\n"
              + Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII))
                  .encodeToString(key.getEncoded())
              + "\n-----END PRIVATE KEY-----\n";
      Files.writeString(privateKey, pem, StandardCharsets.US_ASCII);
    } catch (GeneralSecurityException e) {
      throw new IOException("cannot read the key keytool made", e);
    }
    return new Certificates(keystore, certificate, privateKey, truststore, password);
  }

  private static void keytool(String... args) throws IOException {
    List<String> command = new ArrayList<>();
    command.add(Path.of(System.getProperty("java.home"), "bin", "keytool").toString());
    command.addAll(List.of(args));
    Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
    try {
      String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
        p.destroyForcibly();
        throw new IOException("keytool " + args[0] + " failed: " + output);
      }
    } catch (InterruptedException e) {
      p.destroyForcibly();
      Thread.currentThread().interrupt();
      throw new IOException("interrupted while keytool ran", e);
    }
  }
}
