/**
 * The analysts' report of suppressed sends: counts by campaign, segment, channel and reason, over
 * time, and as a self-contained HTML page with SVG charts. Knows sendcap's records, not Kafka.
 */
package io.sendcap.report;
