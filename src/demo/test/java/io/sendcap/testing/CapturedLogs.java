package io.sendcap.testing;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.spi.ThrowableProxyUtil;
import ch.qos.logback.core.read.ListAppender;
import java.util.List;
import org.slf4j.LoggerFactory;

/**
 * The log events of this JVM while it is open, each as a line would show it (message and stack
 * trace), with sendcap's own at INFO as {@code run} logs them: a tool run earlier in the same JVM
 * may have set them to WARN (tools are quiet).
 */
public final class CapturedLogs implements AutoCloseable {
  private final ListAppender<ILoggingEvent> appender = new ListAppender<>();
  private final Logger sendcap = (Logger) LoggerFactory.getLogger("io.sendcap");
  private final Level sendcapLevel = sendcap.getLevel();

  /** Starts capturing. */
  public CapturedLogs() {
    appender.start();
    sendcap.setLevel(Level.INFO);
    root().addAppender(appender);
  }

  /** What was logged so far. */
  public List<String> lines() {
    synchronized (appender.list) {
      return appender.list.stream()
          .map(
              e ->
                  e.getFormattedMessage()
                      + (e.getThrowableProxy() == null
                          ? ""
                          : "\n" + ThrowableProxyUtil.asString(e.getThrowableProxy())))
          .toList();
    }
  }

  @Override
  public void close() {
    root().detachAppender(appender);
    appender.stop();
    sendcap.setLevel(sendcapLevel);
  }

  private static Logger root() {
    return (Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
  }
}
