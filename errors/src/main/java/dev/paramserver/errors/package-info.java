/**
 * Domain errors with a machine-readable reason, in plain Java: {@link
 * dev.paramserver.errors.ErrorReason} (the proto enum's twin) and {@link
 * dev.paramserver.errors.ServiceException}, which domain classes throw and each service's one error
 * mapping (rpc-support's {@code ErrorMappingInterceptor}) turns into a status.
 */
package dev.paramserver.errors;
