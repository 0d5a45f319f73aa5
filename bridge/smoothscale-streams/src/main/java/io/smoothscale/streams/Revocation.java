package io.smoothscale.streams;

/** A task the operator took from {@code owner} in {@code generation} and may not start elsewhere yet. */
public record Revocation(String owner, long generation) {}
