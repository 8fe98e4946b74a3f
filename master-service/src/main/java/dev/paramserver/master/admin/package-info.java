/**
 * The master's part of {@code GET /admin/status}: {@link
 * dev.paramserver.master.admin.MasterStatusSource}, the door for service-support's admin endpoint
 * (the election's state and the job's status).
 */
package dev.paramserver.master.admin;
