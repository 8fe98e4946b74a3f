package dev.paramserver.psctl.command;

import dev.paramserver.recordio.Compressor;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

/** Parses --compressor none|gzip|snappy for picocli. */
public final class CompressorConverter implements ITypeConverter<Compressor> {
  @Override
  public Compressor convert(String value) {
    try {
      return Compressor.parse(value);
    } catch (IllegalArgumentException e) {
      throw new TypeConversionException(e.getMessage());
    }
  }
}
