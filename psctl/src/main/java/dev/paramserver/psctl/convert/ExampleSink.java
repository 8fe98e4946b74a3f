package dev.paramserver.psctl.convert;

import dev.paramserver.proto.v1.Example;
import java.io.IOException;

/** Receives the examples parsed from an input file. */
@FunctionalInterface
interface ExampleSink {
  void accept(Example example) throws IOException;
}
