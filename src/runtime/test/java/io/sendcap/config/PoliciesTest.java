package io.sendcap.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sendcap.avro.Channel;
import java.nio.file.Path;
import java.time.Duration;
import java.time.ZoneId;
import java.time.ZoneOffset;
import org.junit.jupiter.api.Test;

class PoliciesTest {
  private static InvalidConfigException invalid(String yaml) {
    try {
      Policies.parse(yaml, "p.yaml");
    } catch (InvalidConfigException e) {
      return e;
    }
    throw new AssertionError("expected the policies to be rejected:\n" + yaml);
  }

  @Test
  void theShippedSampleIsValidAndKeepsThePriorityOrder() {
    Policies p = Policies.load(Path.of("config/policies.yaml"));
    assertThat(p.segmentNames()).containsExactly("new-users", "active", "dormant");
    Policy newUsers = p.segments().get(0);
    assertThat(newUsers.caps())
        .containsExactly(
            new Cap("1d", Duration.ofDays(1), 1), new Cap("7d", Duration.ofDays(7), 3));
    assertThat(newUsers.minInterval()).isEqualTo(Duration.ofHours(4));
    assertThat(newUsers.horizon()).isEqualTo(Duration.ofDays(7));
    assertThat(p.defaultPolicy().segment()).isEqualTo("default");
    assertThat(p.defaultPolicy().minInterval()).isZero();
  }

  @Test
  void howManyCapsSegmentsAndGlobalCapsAPolicyFileHoldsIsBounded() {
    StringBuilder caps = new StringBuilder();
    for (int c = 1; c <= Policies.MAX_CAPS + 1; c++) {
      caps.append("    - {window: ").append(c).append("d, limit: 5, algorithm: fixed-window}\n");
    }
    StringBuilder segments = new StringBuilder("segments:\n");
    for (int i = 0; i <= Policies.MAX_SEGMENTS; i++) {
      segments.append("  - {name: s").append(i).append(", caps: [{window: 1d, limit: 1}]}\n");
    }
    StringBuilder global = new StringBuilder("global:\n");
    for (int i = 0; i <= Policies.MAX_GLOBAL_CAPS; i++) {
      global.append("  - {name: g").append(i).append(", window: 1d, limit: 9}\n");
    }

    assertThat(invalid("default:\n  caps:\n" + caps).problems())
        .containsExactly(
            "default.caps=\"["
                + (Policies.MAX_CAPS + 1)
                + " caps]\" is invalid: at most "
                + Policies.MAX_CAPS
                + " caps per policy");
    assertThat(invalid(segments + "default: {caps: [{window: 1d, limit: 1}]}").problems())
        .containsExactly(
            "segments=\"["
                + (Policies.MAX_SEGMENTS + 1)
                + " segments]\" is invalid: at most "
                + Policies.MAX_SEGMENTS
                + " segments");
    assertThat(invalid(global + "default: {caps: [{window: 1d, limit: 1}]}").problems())
        .containsExactly(
            "global=\"["
                + (Policies.MAX_GLOBAL_CAPS + 1)
                + " caps]\" is invalid: at most "
                + Policies.MAX_GLOBAL_CAPS
                + " caps across users");
    assertThat(
            invalid(
                    "default: {caps: [{window: 1d, limit: 1}]}\nglobal: [{name: g, window: 1d,"
                        + " limit: 9, campaign: "
                        + "c".repeat(Policies.MAX_CAMPAIGN_ID + 1)
                        + "}]")
                .problems())
        .singleElement(org.assertj.core.api.InstanceOfAssertFactories.STRING)
        .contains("global[0].campaign=", "at most " + Policies.MAX_CAMPAIGN_ID + " characters");
  }

  @Test
  void everyProblemIsReportedAtOnceWithItsPathValueAndWhatIsAllowed() {
    InvalidConfigException e =
        invalid(
            """
            segments:
              - name: Active Users
                caps:
                  - {window: 1x, limit: 0}
                min-interval: soon
            default:
              caps: []
            """);
    assertThat(e.problems())
        .containsExactly(
            "segments[0].name=\"Active Users\" is invalid: lower-case letters, digits, '.', '_'"
                + " or '-', at most 64, and not 'default'",
            "segments[0].caps[0].window=\"1x\" is invalid: "
                + Durations.ALLOWED
                + ", or calendar-day, calendar-week or calendar-month",
            "segments[0].caps[0].limit=\"0\" is invalid: a whole number >= 1",
            "segments[0].min-interval=\"soon\" is invalid: " + Durations.ALLOWED,
            "default.caps=\"[]\" is invalid: a list of one or more caps");
    assertThat(e.getMessage()).startsWith("p.yaml: ");
  }

  @Test
  void aMissingDefaultADuplicateSegmentAndAnUnknownKeyAreRejected() {
    InvalidConfigException e =
        invalid(
            """
            segments:
              - {name: a, caps: [{window: 1d, limit: 1}]}
              - {name: a, caps: [{window: 1d, limit: 1}], max: 3}
            """);
    assertThat(e.problems())
        .contains(
            "segments[1].name=\"a\" is invalid: each segment may appear once",
            "segments[1].max=\"3\" is invalid: unknown key; allowed: name, caps, min-interval, zone",
            "default=(missing) is invalid: a policy for users in no segment, with at least one"
                + " cap");
  }

  @Test
  void calendarWindowsChannelsAndZonesAreRead() {
    Policies p =
        Policies.parse(
            """
            segments:
              - name: active
                zone: Europe/Berlin
                caps:
                  - {window: calendar-week, limit: 10}
                  - {window: 1d, limit: 1, channel: sms}
            default:
              caps: [{window: calendar-month, limit: 20}]
            """,
            "p.yaml");
    Policy active = p.segments().get(0);
    assertThat(active.zone()).isEqualTo(ZoneId.of("Europe/Berlin"));
    assertThat(active.caps())
        .containsExactly(
            new Cap(
                "calendar-week", Cap.Kind.CALENDAR_WEEK, CalendarPeriods.LONGEST_WEEK, 10, null),
            new Cap("1d", Cap.Kind.ROLLING, Duration.ofDays(1), 1, Channel.SMS));
    assertThat(p.defaultPolicy().zone()).isEqualTo(ZoneOffset.UTC);
    assertThat(p.defaultPolicy().horizon()).isEqualTo(CalendarPeriods.LONGEST_MONTH);
  }

  @Test
  void anUnknownChannelWindowOrZoneIsNamed() {
    InvalidConfigException e =
        invalid(
            """
            default:
              zone: Mars/Olympus
              caps: [{window: calendar-year, limit: 1, channel: fax}]
            """);
    assertThat(e.problems())
        .containsExactly(
            "default.caps[0].window=\"calendar-year\" is invalid: "
                + Durations.ALLOWED
                + ", or calendar-day, calendar-week or calendar-month",
            "default.caps[0].channel=\"fax\" is invalid: one of EMAIL, PUSH, SMS, IN_APP",
            "default.zone=\"Mars/Olympus\" is invalid: a time zone id such as Europe/Berlin or UTC");
  }

  @Test
  void eachCapNamesItsAlgorithmAndTheSlidingLogIsTheDefault() {
    Policy p =
        Policies.parse(
                """
                default:
                  caps:
                    - {window: 1d, limit: 2}
                    - {window: 1d, limit: 2, algorithm: sliding-window}
                    - {window: 1h, limit: 1, algorithm: fixed-window, channel: sms}
                    - {window: 7d, limit: 5, algorithm: Token-Bucket}
                    - {window: calendar-day, limit: 3, algorithm: sliding-log}
                """,
                "p.yaml")
            .defaultPolicy();
    assertThat(p.caps())
        .extracting(Cap::algorithm)
        .containsExactly(
            Cap.Algorithm.SLIDING_LOG,
            Cap.Algorithm.SLIDING_WINDOW,
            Cap.Algorithm.FIXED_WINDOW,
            Cap.Algorithm.TOKEN_BUCKET,
            Cap.Algorithm.SLIDING_LOG);
    assertThat(p.caps().get(2))
        .isEqualTo(
            new Cap(
                "1h",
                Cap.Kind.ROLLING,
                Duration.ofHours(1),
                1,
                Channel.SMS,
                Cap.Algorithm.FIXED_WINDOW));
    assertThat(p.logHorizon()).as("the sliding logs' windows").isEqualTo(Duration.ofHours(25));
    assertThat(p.horizon()).as("the token bucket's 7 days").isEqualTo(Duration.ofDays(7));
  }

  @Test
  void anUnknownAlgorithmOrACounterOnACalendarWindowIsReportedWithEveryOtherProblem() {
    InvalidConfigException e =
        invalid(
            """
            segments:
              - name: a
                caps:
                  - {window: 1d, limit: 1, algorithm: leaky-bucket}
                  - {window: calendar-week, limit: 3, algorithm: fixed-window}
                  - {window: 1d, limit: 0, algorithm: token-bucket}
                  - {window: 100ms, limit: 100, algorithm: fixed-window}
            default:
              caps: [{window: 1w, limit: 2000000000, algorithm: sliding-window}]
            """);
    assertThat(e.problems())
        .containsExactly(
            "segments[0].caps[0].algorithm=\"leaky-bucket\" is invalid: one of sliding-log,"
                + " sliding-window, fixed-window, token-bucket",
            "segments[0].caps[1].algorithm=\"fixed-window\" is invalid: sliding-log only for the"
                + " calendar window calendar-week; sliding-window, fixed-window and token-bucket"
                + " need a rolling window such as 1d",
            "segments[0].caps[2].limit=\"0\" is invalid: a whole number >= 1",
            "segments[0].caps[3].limit=\"100\" is invalid: at most 99 for a fixed-window cap of"
                + " 100ms (its count stays below the window in ms)",
            "default.caps[0].limit=\"2000000000\" is invalid: at most 1861606 for a"
                + " sliding-window cap of 1w (its count stays below the window in ms, limit ×"
                + " window below 2^50)");
  }

  @Test
  void globalCapsAreReadWithTheirScopeAndBatchBound() {
    Policies p =
        Policies.parse(
            """
            default:
              caps: [{window: 1d, limit: 2}]
            global:
              - {name: campaign-budget, per: campaign, window: 1d, limit: 2000000}
              - {name: email-provider, per: channel, channel: EMAIL, window: 1s, limit: 5000}
              - {name: black-friday, campaign: bf-2026, window: 1h, limit: 100, max-batch: 7}
            """,
            "p.yaml");

    assertThat(p.global())
        .containsExactly(
            new GlobalCap(
                "campaign-budget",
                GlobalCap.Per.CAMPAIGN,
                null,
                null,
                "1d",
                Duration.ofDays(1),
                2_000_000,
                2_000),
            new GlobalCap(
                "email-provider",
                GlobalCap.Per.CHANNEL,
                Channel.EMAIL,
                null,
                "1s",
                Duration.ofSeconds(1),
                5_000,
                5),
            new GlobalCap(
                "black-friday",
                GlobalCap.Per.ALL,
                null,
                "bf-2026",
                "1h",
                Duration.ofHours(1),
                100,
                7));
  }

  @Test
  void everyProblemOfAGlobalCapIsNamed() {
    InvalidConfigException e =
        invalid(
            """
            default:
              caps: [{window: 1d, limit: 2}]
            global:
              - {name: Budget, per: user, window: calendar-day, limit: 0, max-batch: -1}
              - {name: b, window: 1d, limit: 5}
              - {name: b, window: 1d, limit: 5}
            """);
    assertThat(e.problems())
        .containsExactly(
            "global[0].name=\"Budget\" is invalid: lower-case letters, digits, '.', '_' or '-',"
                + " at most 64",
            "global[0].per=\"user\" is invalid: all, campaign or channel",
            "global[0].window=\"calendar-day\" is invalid: "
                + Durations.ALLOWED
                + " (fixed windows from the epoch)",
            "global[0].limit=\"0\" is invalid: a whole number from 1 to 2147483647",
            "global[0].max-batch=\"-1\" is invalid: a whole number >= 1",
            "global[2].name=\"b\" is invalid: each global cap may appear once");
  }

  @Test
  void malformedYamlIsReportedAsSuch() {
    assertThatThrownBy(() -> Policies.parse("segments: [", "p.yaml"))
        .isInstanceOf(InvalidConfigException.class)
        .hasMessageContaining("p.yaml: not valid YAML");
  }

  @Test
  void durationsTakeAWholeNumberAndAUnit() {
    assertThat(Durations.parse("500ms")).contains(Duration.ofMillis(500));
    assertThat(Durations.parse("12h")).contains(Duration.ofHours(12));
    assertThat(Durations.parse("2w")).contains(Duration.ofDays(14));
    assertThat(Durations.parse("0d")).isEmpty();
    assertThat(Durations.parse("1.5d")).isEmpty();
    assertThat(Durations.parse("-1d")).isEmpty();
    assertThat(Durations.parse("3650d")).contains(Durations.MAX);
    assertThat(Durations.parse("3651d")).isEmpty();
    assertThat(Durations.parse("999999999999w")).isEmpty();
  }

  @Test
  void aWindowTooLongToCountInMillisecondsIsAProblemNotACrash() {
    InvalidConfigException e =
        invalid(
            """
            default:
              caps:
                - {window: 999999999999w, limit: 1}
                - {window: 522w, limit: 1, algorithm: token-bucket}
            global:
              - {name: forever, window: 99999999999d, limit: 5}
            """);
    assertThat(e.problems())
        .containsExactly(
            "default.caps[0].window=\"999999999999w\" is invalid: "
                + Durations.ALLOWED
                + ", or calendar-day, calendar-week or calendar-month",
            "default.caps[1].window=\"522w\" is invalid: "
                + Durations.ALLOWED
                + ", or calendar-day, calendar-week or calendar-month",
            "global[0].window=\"99999999999d\" is invalid: "
                + Durations.ALLOWED
                + " (fixed windows from the epoch)");
  }
}
