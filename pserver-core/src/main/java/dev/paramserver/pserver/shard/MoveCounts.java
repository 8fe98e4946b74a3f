package dev.paramserver.pserver.shard;

/** Rows and dense blocks a slot move copied, installed or dropped. */
public record MoveCounts(long rows, int blocks) {}
