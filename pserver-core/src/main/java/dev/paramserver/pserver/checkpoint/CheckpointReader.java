package dev.paramserver.pserver.checkpoint;

import com.google.protobuf.ByteString;
import com.google.protobuf.CodedInputStream;
import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.ExtensionRegistryLite;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.WireFormat;
import dev.paramserver.proto.v1.ShardCheckpoint;
import dev.paramserver.proto.v1.SparseTableCheckpoint;
import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.zip.CRC32;
import java.util.zip.CheckedInputStream;

/**
 * Reads checkpoint files as streams: one top-level field at a time, the CRC-32 computed as the
 * bytes go by, sparse-table entries handed to a {@link CheckpointStore.Restorer} as they are
 * parsed.
 */
final class CheckpointReader {
  private CheckpointReader() {}

  /** Collects a checkpoint whole. */
  static final class Whole implements CheckpointStore.Restorer {
    private final List<SparseTableCheckpoint> tables = new ArrayList<>();
    private ShardCheckpoint header;

    @Override
    public void table(ShardCheckpoint headerSoFar, SparseTableCheckpoint table) {
      tables.add(table);
    }

    @Override
    public void install(ShardCheckpoint header) {
      this.header = header;
    }

    @Override
    public void discard() {
      tables.clear();
    }

    ShardCheckpoint checkpoint() {
      return header.toBuilder().addAllSparseTables(tables).build();
    }
  }

  /** Reads a whole checkpoint file into memory, checking its CRC-32 (tools and tests). */
  static ShardCheckpoint read(String path, int expectedCrc) throws IOException {
    Whole whole = new Whole();
    whole.install(read(path, expectedCrc, whole));
    return whole.checkpoint();
  }

  /**
   * Reads a checkpoint file as a stream, one top-level field at a time, computing its CRC-32 as the
   * bytes go by: sparse-table entries go to {@code restorer} as they are parsed, every other field
   * is kept. The CRC is checked once the whole file is read.
   *
   * @return every field but the table entries (only valid when the CRC matched, i.e. when this
   *     returns)
   */
  public static ShardCheckpoint read(
      String path, int expectedCrc, CheckpointStore.Restorer restorer) throws IOException {
    try (InputStream file = Files.newInputStream(Path.of(path))) {
      return read(file, path, expectedCrc, restorer);
    } catch (NoSuchFileException e) {
      throw new IOException("file " + path + " does not exist", e);
    }
  }

  /**
   * Like {@link #read(String, int, CheckpointStore.Restorer)} from an open stream (a local file or
   * an object streamed from the store) named {@code path} in messages.
   */
  static ShardCheckpoint read(
      InputStream file, String path, int expectedCrc, CheckpointStore.Restorer restorer)
      throws IOException {
    CRC32 crc = new CRC32();
    ShardCheckpoint header;
    try (CheckedInputStream in =
        new CheckedInputStream(new BufferedInputStream(file, READ_BUFFER), crc)) {
      try {
        header = parseStreamed(CodedInputStream.newInstance(in, READ_BUFFER), restorer);
      } catch (InvalidProtocolBufferException e) {
        throw new IOException("file " + path + " is not a ShardCheckpoint: " + e.getMessage(), e);
      }
      // The parser stops at the end of the stream; anything left would be trailing garbage that
      // the CRC still has to cover.
      in.transferTo(OutputStream.nullOutputStream());
    }
    if ((int) crc.getValue() != expectedCrc) {
      throw new IOException(
          "file "
              + path
              + " has CRC-32 "
              + Long.toHexString(crc.getValue())
              + ", expected "
              + Integer.toHexString(expectedCrc));
    }
    return header;
  }

  private static final int READ_BUFFER = 1 << 16;

  /**
   * Parses a {@link ShardCheckpoint} field by field: table entries go to {@code restorer}, every
   * other field (known or not, in whatever order) is copied into the header, which is parsed as a
   * message of its own. The size counter is reset after every top-level field so only one block or
   * table entry at a time counts against protobuf's limit.
   */
  private static ShardCheckpoint parseStreamed(
      CodedInputStream in, CheckpointStore.Restorer restorer) throws IOException {
    in.setSizeLimit(Integer.MAX_VALUE);
    ExtensionRegistryLite registry = ExtensionRegistryLite.getEmptyRegistry();
    ByteString.Output headerBytes = ByteString.newOutput();
    CodedOutputStream header = CodedOutputStream.newInstance(headerBytes);
    ShardCheckpoint parsedHeader = null;
    for (int tag = in.readTag(); tag != 0; tag = in.readTag()) {
      if (WireFormat.getTagFieldNumber(tag) == ShardCheckpoint.SPARSE_TABLES_FIELD_NUMBER) {
        if (parsedHeader == null) {
          header.flush();
          parsedHeader = ShardCheckpoint.parseFrom(headerBytes.toByteString());
        }
        restorer.table(parsedHeader, in.readMessage(SparseTableCheckpoint.parser(), registry));
      } else {
        copyField(tag, in, header);
      }
      in.resetSizeCounter();
    }
    header.flush();
    return ShardCheckpoint.parseFrom(headerBytes.toByteString());
  }

  /** Copies one field (its tag and value, byte for byte) from {@code in} to {@code out}. */
  private static void copyField(int tag, CodedInputStream in, CodedOutputStream out)
      throws IOException {
    int number = WireFormat.getTagFieldNumber(tag);
    switch (WireFormat.getTagWireType(tag)) {
      case WireFormat.WIRETYPE_VARINT -> out.writeUInt64(number, in.readRawVarint64());
      case WireFormat.WIRETYPE_FIXED64 -> out.writeFixed64(number, in.readRawLittleEndian64());
      case WireFormat.WIRETYPE_LENGTH_DELIMITED -> out.writeBytes(number, in.readBytes());
      case WireFormat.WIRETYPE_FIXED32 -> out.writeFixed32(number, in.readRawLittleEndian32());
      default ->
          throw new InvalidProtocolBufferException(
              "unexpected wire type in tag " + tag + " (groups are not part of a checkpoint)");
    }
  }
}
