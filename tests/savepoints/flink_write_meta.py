#!/usr/bin/env python3
"""Write keyed state meta info with Flink's own classes, and what Flink reads back.

    python tests/savepoints/flink_write_meta.py OUT

Through py4j (this interpreter's PyFlink), ``KeyedBackendSerializationProxy``
writes to OUT the meta info of keyed states whose serializers are of formats
chainlens does not read as such (``EnumSerializer``, ``KryoSerializer``, a
``PojoSerializer`` (of the Table API's ``ListView``), a Kryo one nested in a
``ListSerializer``) between states it reads (a
``LongSerializer``, a ``StringSerializer``), each
``RegisteredKeyValueStateBackendMetaInfo.snapshot()`` as a backend writes it.
Then Flink reads OUT back (``KeyedBackendSerializationProxy.read``) and one
line of JSON says, per state, its name, backend state type, options and the
class of each serializer snapshot.
"""

from __future__ import annotations

import json
import sys
from typing import Any

STATES = [
    ("a_long", "VALUE", "long"),
    ("an_enum", "VALUE", "enum"),
    ("a_kryo", "VALUE", "kryo"),
    ("a_pojo", "VALUE", "pojo"),
    ("kryo_in_a_list", "LIST", "list_kryo"),
    ("a_string", "MAP", "map"),
]


def _serializer(gateway: Any, what: str) -> Any:
    jvm = gateway.jvm
    base = jvm.org.apache.flink.api.common.typeutils.base
    config = jvm.org.apache.flink.api.common.serialization.SerializerConfigImpl()
    kryo = jvm.org.apache.flink.api.java.typeutils.runtime.kryo.KryoSerializer
    date = jvm.java.lang.Class.forName("java.util.Date")
    if what == "long":
        return base.LongSerializer.INSTANCE
    if what == "enum":
        unit = jvm.java.lang.Class.forName("java.util.concurrent.TimeUnit")
        return base.EnumSerializer(unit)
    if what == "kryo":
        return kryo(date, config)
    if what == "pojo":  # the Table API's ListView is a POJO
        view = jvm.java.lang.Class.forName(
            "org.apache.flink.table.api.dataview.ListView"
        )
        info = jvm.org.apache.flink.api.java.typeutils.TypeExtractor.createTypeInfo(
            view
        )
        return info.createSerializer(config)
    if what == "list_kryo":
        return base.ListSerializer(kryo(date, config))
    return base.MapSerializer(
        base.StringSerializer.INSTANCE, base.StringSerializer.INSTANCE
    )


def main(argv: list[str]) -> int:
    out = argv[0]
    from pyflink.java_gateway import get_gateway

    gateway = get_gateway()
    jvm = gateway.jvm
    state = jvm.org.apache.flink.runtime.state
    kinds = jvm.java.lang.Class.forName(
        "org.apache.flink.api.common.state.StateDescriptor$Type"
    ).getEnumConstants()
    by_name = {str(k.name()): k for k in kinds}
    metas = jvm.java.util.ArrayList()
    for name, kind, what in STATES:
        info = state.RegisteredKeyValueStateBackendMetaInfo(
            by_name[kind],
            name,
            state.VoidNamespaceSerializer.INSTANCE,
            _serializer(gateway, what),
        )
        metas.add(info.snapshot())
    proxy = state.KeyedBackendSerializationProxy(
        jvm.org.apache.flink.api.common.typeutils.base.LongSerializer.INSTANCE,
        metas,
        False,
    )
    stream = jvm.java.io.FileOutputStream(out)
    try:
        proxy.write(
            jvm.org.apache.flink.core.memory.DataOutputViewStreamWrapper(stream)
        )
    finally:
        stream.close()
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    back = state.KeyedBackendSerializationProxy(loader)
    source = jvm.java.io.FileInputStream(out)
    try:
        back.read(jvm.org.apache.flink.core.memory.DataInputViewStreamWrapper(source))
    finally:
        source.close()
    found = []
    for meta in back.getStateMetaInfoSnapshots().toArray():
        options = meta.getOptionsImmutable()
        serializers = meta.getSerializerSnapshotsImmutable()
        found.append(
            {
                "name": str(meta.getName()),
                "backend": str(meta.getBackendStateType().name()),
                "options": {
                    str(k): str(options.get(k)) for k in options.keySet().toArray()
                },
                "serializers": {
                    str(k): str(serializers.get(k).getClass().getName())
                    for k in serializers.keySet().toArray()
                },
            }
        )
    print(json.dumps({"states": found}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
