/** sendcap: per-user frequency caps for campaign sends. */
package io.sendcap;
