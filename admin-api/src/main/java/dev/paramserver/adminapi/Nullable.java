package dev.paramserver.adminapi;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * A value of an admin answer that may be {@code null} on the wire (the field is there, its value
 * null). On a record component ({@code @Nullable Double loss}) or a list's items ({@code
 * List<@Nullable Double>}); the published schema then allows {@code null} there and nowhere else.
 */
@Retention(RetentionPolicy.RUNTIME)
@Target(ElementType.TYPE_USE)
public @interface Nullable {}
