/**
 * How psctl's executable jar is laid out for class-data sharing and AOT caches: {@code
 * BootJarLayout}, which the root package's {@code archive} command uses.
 */
package dev.paramserver.psctl.startup;
