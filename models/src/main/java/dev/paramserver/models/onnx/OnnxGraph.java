package dev.paramserver.models.onnx;

import com.google.protobuf.ByteString;
import dev.paramserver.onnx.proto.AttributeProto;
import dev.paramserver.onnx.proto.GraphProto;
import dev.paramserver.onnx.proto.NodeProto;
import dev.paramserver.onnx.proto.TensorProto;
import dev.paramserver.onnx.proto.TensorShapeProto;
import dev.paramserver.onnx.proto.TypeProto;
import dev.paramserver.onnx.proto.ValueInfoProto;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;

/** Builds an ONNX graph node by node: constants, inputs, outputs and operators. */
final class OnnxGraph {
  private final GraphProto.Builder graph = GraphProto.newBuilder();
  private int next;

  OnnxGraph(String name) {
    graph.setName(name);
  }

  GraphProto build() {
    return graph.build();
  }

  /** A fresh value name with the given stem. */
  String name(String stem) {
    return stem + "_" + next++;
  }

  /** A float32 constant (an initializer) of the given shape; returns its name. */
  String floats(String name, float[] values, long... dims) {
    ByteBuffer buf = ByteBuffer.allocate(values.length * 4).order(ByteOrder.LITTLE_ENDIAN);
    buf.asFloatBuffer().put(values);
    graph.addInitializer(
        tensor(name, TensorProto.DataType.FLOAT, dims).setRawData(ByteString.copyFrom(buf)));
    return name;
  }

  /** An int64 constant (an initializer) of the given shape; returns its name. */
  String longs(String name, long[] values, long... dims) {
    ByteBuffer buf = ByteBuffer.allocate(values.length * 8).order(ByteOrder.LITTLE_ENDIAN);
    buf.asLongBuffer().put(values);
    graph.addInitializer(
        tensor(name, TensorProto.DataType.INT64, dims).setRawData(ByteString.copyFrom(buf)));
    return name;
  }

  private static TensorProto.Builder tensor(String name, TensorProto.DataType type, long[] dims) {
    TensorProto.Builder t = TensorProto.newBuilder().setName(name).setDataType(type.getNumber());
    for (long d : dims) {
      t.addDims(d);
    }
    return t;
  }

  /** A graph input; {@code dims} holds numbers or names of symbolic dimensions. */
  void input(String name, TensorProto.DataType type, String doc, Object... dims) {
    graph.addInput(valueInfo(name, type, doc, dims));
  }

  void output(String name, TensorProto.DataType type, String doc, Object... dims) {
    graph.addOutput(valueInfo(name, type, doc, dims));
  }

  private static ValueInfoProto valueInfo(
      String name, TensorProto.DataType type, String doc, Object[] dims) {
    TensorShapeProto.Builder shape = TensorShapeProto.newBuilder();
    for (Object d : dims) {
      TensorShapeProto.Dimension.Builder dim = TensorShapeProto.Dimension.newBuilder();
      if (d instanceof Number n) {
        dim.setDimValue(n.longValue());
      } else {
        dim.setDimParam(d.toString());
      }
      shape.addDim(dim);
    }
    return ValueInfoProto.newBuilder()
        .setName(name)
        .setDocString(doc)
        .setType(
            TypeProto.newBuilder()
                .setTensorType(
                    TypeProto.Tensor.newBuilder().setElemType(type.getNumber()).setShape(shape)))
        .build();
  }

  /** Adds a node of the default (ai.onnx) domain with one output; returns the output's name. */
  String op(String opType, String output, List<String> inputs, AttributeProto... attributes) {
    return node("", opType, output, inputs, attributes);
  }

  /** Adds a node of the given domain with one output; returns the output's name. */
  String node(
      String domain,
      String opType,
      String output,
      List<String> inputs,
      AttributeProto... attributes) {
    NodeProto.Builder n =
        NodeProto.newBuilder()
            .setOpType(opType)
            .setDomain(domain)
            .setName(output + "_" + opType)
            .addAllInput(inputs)
            .addOutput(output);
    for (AttributeProto a : attributes) {
      n.addAttribute(a);
    }
    graph.addNode(n);
    return output;
  }

  static AttributeProto intAttr(String name, long value) {
    return AttributeProto.newBuilder()
        .setName(name)
        .setType(AttributeProto.AttributeType.INT)
        .setI(value)
        .build();
  }

  static AttributeProto intsAttr(String name, long[] values) {
    AttributeProto.Builder a =
        AttributeProto.newBuilder().setName(name).setType(AttributeProto.AttributeType.INTS);
    for (long v : values) {
      a.addInts(v);
    }
    return a.build();
  }
}
